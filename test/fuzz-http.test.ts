/**
 * The HTTP surface as untrusted input (SPEC 5 and 9), fuzzed with fast-check through
 * `fastify.inject()` over a real runner (`createRunner` with a private redis-server):
 * random paths (unicode, very long, `%` sequences, `..`), methods, JSON and non-JSON
 * bodies, huge bodies, odd headers and odd Authorization values. Never a 5xx (but the 503
 * of `/health` when a job is degraded), never a stack trace or a secret in a body, no
 * "request failed" log line, no admin action without the right token; and afterwards the
 * node still answers and its jobs keep running and being counted.
 * Seeded, so a failure is reproducible; set FUZZ_SEED to explore other cases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type InjectOptions } from 'fastify';
import type { Redis } from 'ioredis';
import { createRunner, type Runner } from '../src/create/index.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const SEED = Number(process.env['FUZZ_SEED'] ?? 0x4770);
const params = (numRuns: number): fc.Parameters<unknown> => ({ seed: SEED, numRuns });

const TOKEN = 'Fuzz-Admin-T0ken-never-echoed';
const PASSWORD = 'Fuzz-Redis-Passw0rd';
const PREFIX = 'fuzz-http';
const JOBS = ['tick', 'shared.job', 'broken'];
const STACK = /\n\s+at .+[(:]\d+|"stack"/;
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'] as const;

const segment = fc.oneof(
  fc.constantFrom('manage', 'jobs', 'health', 'live', 'ready', 'metrics', 'run', 'pause', 'resume', ...JOBS, 'unknown-job', '..', '.', '', '%', '%zz', '%2e%2e', '%2F', '%00', '%E0%A4%A', '%C0%AF', '%25', '%u2215', ';', '*', '~', '{tick}', 'tick%20', 'a'.repeat(129), 'x'.repeat(300)),
  fc.string({ maxLength: 12, unit: 'grapheme' }),
  fc.string({ maxLength: 8, unit: 'binary' }),
);
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom('?', '?a=1', '?a=1&a=2', '?a[b]=c', '?__proto__[x]=1', '?constructor=1', `?${Array.from({ length: 40 }, (_, i) => `k${i}=v`).join('&')}`, '?%zz=%', '?x=' + 'y'.repeat(5_000)),
  fc.string({ maxLength: 10 }).map((s) => `?${s}`),
);
const randomPath = fc.tuple(
  fc.constantFrom('', '/manage', '/manage/jobs', '/health', '/metrics'),
  fc.array(segment, { maxLength: 4 }),
  fc.constantFrom('', '/', '//'),
  query,
).map(([base, segs, end, q]) => `${base}/${segs.join('/')}${end}${q}`);
/** The real routes with one part changed, so most requests reach a handler. */
const nearPath = fc.tuple(
  fc.constantFrom('/manage/jobs/', '/manage/jobs/', '/manage/jobs/', '/manage//jobs/', '/MANAGE/jobs/', '/manage/jobs/../jobs/'),
  fc.oneof(fc.constantFrom(...JOBS, ...JOBS.map(encodeURIComponent), 'tick%2Frun', 'unknown-job'), segment),
  fc.constantFrom('', '/', '/run', '/pause', '/resume', '/run/', '/RUN', '/run/x', '/pause%00'),
  query,
).map(([base, id, action, q]) => `${base}${id}${action}${q}`);
const path = fc.oneof(randomPath, nearPath, nearPath, fc.constantFrom('/manage/jobs', '/health', '/health/live', '/health/ready', '/metrics').chain((p) => query.map((q) => p + q)));
const authorization = fc.oneof(
  fc.constantFrom(`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `Bearer  ${TOKEN} `, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer', 'Bearer ', 'Bearer\t', `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}`,
    `Bearer ${TOKEN} extra`, `Token ${TOKEN}`, 'Bearer ' + 'A'.repeat(5_000), 'Bearer é', 'Bearer \u0000', ''),
  fc.string({ maxLength: 30 }).map((s) => `Bearer ${s}`),
  fc.string({ maxLength: 30 }),
);
/** Header values inject (like Node's http) refuses: control characters other than tab. */
const headerSafe = (s: string): boolean => [...s].every((c) => {
  const code = c.charCodeAt(0);
  return code === 9 || (code >= 0x20 && code !== 0x7f && code <= 0xff);
});
const contentType = fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'text/plain', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', 'application/octet-stream', 'application/vnd.api+json', 'application/json\t', 'json', '', ';');
const body = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('', ' ', '{}', 'null', '[]', '{"a":1}', '"x"', '1', 'true', '{', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '\u0000', 'a=1&b=2', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--'),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 64, unit: 'binary' }),
  fc.constantFrom(4_095, 4_097, 70_000, 1_100_000).map((n) => `{"pad":"${'p'.repeat(n)}"}`),
);
const anyRequest: fc.Arbitrary<InjectOptions> = fc.record({
  method: fc.constantFrom(...METHODS),
  url: path,
  auth: fc.option(authorization, { nil: undefined }),
  type: contentType,
  payload: body,
  extra: fc.option(fc.dictionary(fc.constantFrom('x-forwarded-for', 'accept', 'accept-encoding', 'content-length', 'transfer-encoding', 'host', 'expect', 'x-a'), fc.string({ maxLength: 20 }), { maxKeys: 3 }), { nil: undefined }),
}).map(({ method, url, auth, type, payload, extra }) => {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(extra ?? {})) if (headerSafe(v) && k !== 'content-length' && k !== 'transfer-encoding' && k !== 'host') headers[k] = v;
  if (auth !== undefined && headerSafe(auth)) headers['authorization'] = auth;
  if (type !== undefined) headers['content-type'] = type;
  return { method, url, headers, ...(payload === undefined || method === 'GET' || method === 'HEAD' ? {} : { payload }) };
});
/** Admin actions as a client would send them, with odd tokens, ids and bodies. */
const adminRequest: fc.Arbitrary<InjectOptions> = fc.record({
  id: fc.oneof(fc.constantFrom(...JOBS), segment),
  action: fc.constantFrom('run', 'pause', 'resume'),
  auth: fc.oneof(fc.constant(`Bearer ${TOKEN}`), authorization),
  json: fc.boolean(),
  payload: fc.oneof(fc.constantFrom(undefined, '', '{}', 'null', ' '), body),
}).map(({ id, action, auth, json, payload }) => ({
  method: 'POST' as const,
  url: `/manage/jobs/${id}/${action}`,
  headers: { ...(headerSafe(auth) ? { authorization: auth } : {}), ...(json ? { 'content-type': 'application/json' } : {}) },
  ...(payload === undefined ? {} : { payload }),
}));
const request = fc.oneof({ weight: 3, arbitrary: anyRequest }, { weight: 1, arbitrary: adminRequest });

describe('HTTP routes under random requests', () => {
  let server: TestRedis;
  let admin: Redis;
  let runner: Runner;
  let app: FastifyInstance;
  const log = memoryLogger('debug');
  const actions: string[] = [];

  before(async () => {
    server = await startRedis({ args: ['--requirepass', PASSWORD] });
    admin = server.client();
    runner = createRunner({ redisUrl: server.url, prefix: PREFIX, logger: log.logger, adminToken: TOKEN, instanceId: 'fuzz-http-1', shutdownGrace: '200ms' });
    runner.add({ id: 'tick', fixedRate: '100ms', run: () => undefined });
    runner.add({ id: 'shared.job', scope: 'installation', fixedRate: '200ms', lease: '2s', run: () => undefined });
    runner.add({ id: 'broken', cron: '*/1 * * * * *', run: () => undefined });
    // Admin actions reach the runner: count them to prove none happens without the token.
    runner.on('runStarted', (e) => {
      if (e.manual) actions.push(e.jobId);
    });
    await runner.start();
    app = Fastify({ loggerInstance: log.logger as FastifyBaseLogger, routerOptions: { maxParamLength: 256 } });
    await app.register(runner.routes);
    await app.ready();
  });

  after(async () => {
    await app?.close();
    await runner?.stop();
    await server?.stop();
  });

  const stats = async (id: string): Promise<number> => Number(await admin.hget(`${PREFIX}:{${id}}:stats`, 'runs'));

  test('no 5xx, no stack trace, no secret; admin only with the token', async () => {
    // A bad schedule makes /health a legitimate 503 for part of the run.
    await admin.hset(`${PREFIX}:settings`, 'broken.cron', '0 0 25 * * *');
    let admitted = 0;
    let client = 0;
    try {
      await fc.assert(fc.asyncProperty(request, async (req) => {
      // Each request from an address of its own: a client's failed token attempts are limited (20 a minute).
      client++;
      const res = await app.inject({ ...req, remoteAddress: `10.77.${(client >> 8) & 255}.${client & 255}` });
      const where = `${req.method ?? ''} ${String(req.url).slice(0, 200)} ${JSON.stringify(req.headers).slice(0, 200)} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
      const health = /^\/health\/?(ready\/?)?(\?|$)/.test(String(req.url)) && (req.method === 'GET' || req.method === 'HEAD');
      assert.ok(res.statusCode < 500 || (res.statusCode === 503 && health), `5xx: ${where}`);
      assert.ok(!STACK.test(res.body), `a stack trace: ${where}`);
      assert.ok(!res.body.includes(TOKEN) && !res.body.includes(PASSWORD), `a secret: ${where}`);
      const adminRoute = req.method === 'POST' && /^\/manage\/jobs\/[^/?]+\/(run|pause|resume)\/?(\?|$)/.test(String(req.url));
      const rightToken = /^Bearer[ \t]+Fuzz-Admin-T0ken-never-echoed[ \t]*$/i.test(String((req.headers as Record<string, string> | undefined)?.['authorization'] ?? ''));
      if (res.statusCode < 300 && adminRoute) {
        assert.ok(rightToken, `an admin action without the token: ${where}`);
        admitted++;
      }
      if (adminRoute && !rightToken) assert.ok(res.statusCode >= 400 && res.statusCode < 500, `admin route answered ${res.statusCode} without the token: ${where}`);
      }), params(2_500));
    } finally {
      // Undo what the right token may have paused.
      for (const id of JOBS) await admin.hdel(`${PREFIX}:settings`, `${id}.paused`);
      await admin.hdel(`${PREFIX}:settings`, 'broken.cron');
    }
    assert.ok(admitted > 0, 'no request with the right token reached an admin action');
  });

  test('the right token, any known or unknown job id: 2xx, 404 or 409, never 5xx', async () => {
    // `.` and `..` are path segments that URLs resolve away, not ids that reach the route.
    const id = fc.oneof(fc.constantFrom(...JOBS), fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/).filter((s) => !/^\.+$/.test(s)));
    try {
      await fc.assert(fc.asyncProperty(id, fc.constantFrom('run', 'pause', 'resume'), fc.constantFrom(undefined, '', '{}', 'null'), async (jobId, action, payload) => {
      const res = await app.inject({ method: 'POST', url: `/manage/jobs/${encodeURIComponent(jobId)}/${action}`, headers: { authorization: `Bearer ${TOKEN}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }, ...(payload === undefined ? {} : { payload }) });
      const known = JOBS.includes(jobId);
      assert.ok(known ? [200, 202, 409].includes(res.statusCode) : res.statusCode === 404, `${action} ${jobId}: ${res.statusCode} ${res.body}`);
      assert.ok(!STACK.test(res.body));
      }), params(200));
    } finally {
      for (const j of JOBS) await admin.hdel(`${PREFIX}:settings`, `${j}.paused`);
    }
  });

  test('raw requests fastify cannot route or parse: still 4xx', async () => {
    const odd: InjectOptions[] = [
      { method: 'GET', url: '/manage/jobs/' + '%'.repeat(3) },
      { method: 'GET', url: '/manage/jobs/' + 'a'.repeat(100_000) },
      { method: 'GET', url: '/' + '../'.repeat(1_000) + 'etc/passwd' },
      { method: 'POST', url: '/manage/jobs/tick/run', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: '{"a":' + '['.repeat(10_000) },
      { method: 'POST', url: '/manage/jobs/tick/run', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: 'x'.repeat(5_000_000) },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' }, payload: 'please' },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: '{"paused":true}' },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { authorization: ['Bearer a', `Bearer ${TOKEN}`] as unknown as string } },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { authorization: 'x'.repeat(70_000) } },
      { method: 'GET', url: '/manage/jobs', headers: { authorization: 'Bearer ' + 'é'.repeat(10) } },
    ];
    for (const req of odd) {
      const res = await app.inject(req);
      const where = `${req.method ?? ''} ${String(req.url).slice(0, 80)} -> ${res.statusCode} ${res.body.slice(0, 200)}`;
      assert.ok(res.statusCode >= 400 && res.statusCode < 500 || (res.statusCode === 200 && req.method === 'GET'), where);
      assert.ok(!STACK.test(res.body), where);
    }
  });

  test('afterwards the node answers, nothing was logged as a failed request, and jobs kept being counted', async () => {
    const before = await stats('tick');
    const beforeShared = await stats('shared.job');
    await sleep(700);
    assert.ok((await stats('tick')) > before, 'the instance job is still counted');
    assert.ok((await stats('shared.job')) > beforeShared, 'the installation job is still counted');
    const res = await app.inject({ method: 'GET', url: '/manage/jobs' });
    assert.equal(res.statusCode, 200);
    const failed = log.lines.filter((l) => l['msg'] === 'request failed' || l['component'] === 'http' || Number(l['level']) >= 60);
    assert.deepEqual(failed.map((l) => String(l['msg'])), []);
    assert.ok(!log.text().includes(TOKEN) && !log.text().includes(PASSWORD), 'a secret in the log');
  });
});
