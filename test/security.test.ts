/**
 * Security (SPEC 3.5 and 5):
 * - the admin token is compared in constant time: every check, whatever the length of the
 *   token offered, goes through `crypto.timingSafeEqual` on two SHA-256 digests of equal
 *   length (observed by replacing `timingSafeEqual` for the duration of a test);
 * - the checker allows exactly `Bearer <the token>`, never echoes a token or a header, and a
 *   token that no header could carry is refused when configured, not silently unusable;
 * - no admin route without a configured token, in process and in a real node;
 * - no secret in any output: real `leasehold start` processes at LOG_LEVEL=trace with the
 *   Redis password in REDIS_URL and an admin token, admin routes called with right and wrong
 *   tokens, Redis frozen meanwhile, bad and wrong-password URLs, and `leasehold status`.
 * Seeded, so a failure is reproducible; set FUZZ_SEED to explore other cases.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { readConfig } from '../src/cli/config.js';
import { isLeaseholdError } from '../src/errors.js';
import { bearerChecker } from '../src/http/auth.js';
import { createRunner } from '../src/create/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold, spawnLeasehold, type NodeProc } from './helpers/node.js';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';

const SEED = Number(process.env['FUZZ_SEED'] ?? 0x5ec);
const params = (numRuns: number): fc.Parameters<unknown> => ({ seed: SEED, numRuns });

const PASSWORD = 'SuperSecretPw';
const TOKEN = 'Adm1n-T0ken-7f3c9e';
const WRONG_PASSWORD = 'WrongSecretPw';
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const printable = fc.stringMatching(/^[\x21-\x7e]{1,64}$/);
/** A token a node accepts: at least 16 characters. */
const configurable = fc.stringMatching(/^[\x21-\x7e]{16,64}$/);

/** Replaces `crypto.timingSafeEqual` (also for ESM imports of it) while `body` runs. */
function spyOnTimingSafeEqual<T>(body: (calls: Array<[Buffer, Buffer]>) => T): T {
  const original = crypto.timingSafeEqual;
  const calls: Array<[Buffer, Buffer]> = [];
  crypto.timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView): boolean => {
    calls.push([Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)]);
    return original(a, b);
  };
  syncBuiltinESMExports();
  try {
    return body(calls);
  } finally {
    crypto.timingSafeEqual = original;
    syncBuiltinESMExports();
  }
}

describe('the admin token check', () => {
  test('every token offered, of any length, is compared with timingSafeEqual on equal-length digests', () => {
    const check = bearerChecker(TOKEN);
    spyOnTimingSafeEqual((calls) => {
      const offered = ['', 'a', TOKEN.slice(0, -1), TOKEN, `${TOKEN}x`, TOKEN.toUpperCase(), 'x'.repeat(TOKEN.length), 'y'.repeat(4_000)];
      for (const token of offered.filter((t) => t !== '')) {
        const before = calls.length;
        const decision = check(`Bearer ${token}`);
        assert.equal(decision.ok, token === TOKEN, token);
        assert.equal(calls.length, before + 1, `one constant-time comparison for a ${token.length}-character token`);
        const [a, b] = calls[calls.length - 1] ?? [];
        assert.equal(a?.length, 32, 'a SHA-256 digest');
        assert.equal(b?.length, 32, 'a SHA-256 digest');
        assert.deepEqual(a, crypto.createHash('sha256').update(token, 'utf8').digest(), 'the digest of the token offered');
      }
      fc.assert(fc.property(printable, (token) => {
        const before = calls.length;
        check(`Bearer ${token}`);
        assert.equal(calls.length, before + 1);
        assert.equal(calls[calls.length - 1]?.[0].length, calls[calls.length - 1]?.[1].length);
      }), params(300));
    });
  });

  test('exactly "Bearer <token>" is allowed; messages never repeat a token or a header', () => {
    const header = fc.oneof(
      printable.map((t) => `Bearer ${t}`),
      fc.constantFrom('Bearer', 'Bearer ', 'bearer', 'Basic abc', 'Token x', `Bearer ${TOKEN} ${TOKEN}`, `Bearer\t${TOKEN}`, `BEARER ${TOKEN}  `, `Bearer ${TOKEN}\n`, ` Bearer ${TOKEN}`, ''),
      fc.string({ maxLength: 40 }),
    );
    fc.assert(fc.property(fc.oneof(configurable, fc.constant(TOKEN)), fc.oneof(header, fc.constant(undefined)), fc.boolean(), (token, given, offerRight) => {
      const authorization = offerRight ? `Bearer ${token}` : given;
      const decision = bearerChecker(token)(authorization);
      const expected = authorization !== undefined && BEARER.exec(authorization)?.[1] === token;
      assert.equal(decision.ok, expected, `token ${JSON.stringify(token)} header ${JSON.stringify(authorization)}`);
      if (!decision.ok) {
        assert.ok(decision.status === 401 || decision.status === 403);
        if (token.length >= 8) assert.ok(!decision.message.includes(token), 'the token is in the message');
        if (authorization && authorization.length >= 12) assert.ok(!decision.message.includes(authorization), 'the header is in the message');
      }
    }), params(3_000));
  });

  test('without a configured token every request is refused with 403', () => {
    for (const configured of [undefined, '']) {
      const check = bearerChecker(configured);
      fc.assert(fc.property(fc.oneof(fc.constantFrom(undefined, '', 'Bearer ', 'Bearer undefined', 'Bearer null', 'Bearer ""', 'Bearer  '), fc.string(), printable.map((t) => `Bearer ${t}`)), (h) => {
        const decision = check(h);
        assert.equal(decision.ok, false);
        assert.equal(decision.ok === false && decision.status, 403);
      }), params(500));
    }
  });

  test('a token that no Authorization header can carry is refused when configured, without showing it', () => {
    for (const token of ['two words', ' padded', 'tab\there', 'naïve', 'line\nbreak', '\u0000']) {
      assert.throws(() => bearerChecker(token), (e: unknown) => isLeaseholdError(e, 'invalidToken') && !e.message.includes(token.trim()), JSON.stringify(token));
      const env = { LEASEHOLD_ADMIN_TOKEN: token.includes('\n') ? token : `x${token}x` };
      assert.throws(() => readConfig({}, env), (e: unknown) =>
        isLeaseholdError(e, 'invalidToken') && e.message.startsWith('LEASEHOLD_ADMIN_TOKEN: ') && !e.message.includes(env.LEASEHOLD_ADMIN_TOKEN.trim()), JSON.stringify(token));
    }
    // Whatever token is accepted can be sent.
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 24 }), (token) => {
      let check;
      try {
        check = bearerChecker(token);
      } catch (err) {
        assert.ok(isLeaseholdError(err, 'invalidToken'));
        return;
      }
      assert.equal(check(`Bearer ${token}`).ok, true, `configured ${JSON.stringify(token)}, but "Bearer <it>" is refused`);
    }), params(1_000));
  });
});

describe('tokens long enough not to be guessed', () => {
  test('a token shorter than 16 characters is refused wherever it is configured, with a clear error that does not show it', () => {
    for (const token of ['x', 'secret', 'dev-admin-token', 'a'.repeat(15)]) {
      const short = (e: unknown, name: string): boolean => isLeaseholdError(e, 'invalidToken') && e.message.startsWith(`${name}: `) && /at least 16 characters/.test(e.message) && (token.length < 8 || !e.message.includes(token));
      assert.throws(() => bearerChecker(token), (e: unknown) => short(e, 'admin token'), token);
      for (const key of ['adminToken', 'readToken', 'metricsToken', 'cookieSecret'] as const) {
        assert.throws(() => createRunner({ [key]: token, logger: memoryLogger().logger }), (e: unknown) => short(e, key), `${key} ${token}`);
      }
      for (const env of ['LEASEHOLD_ADMIN_TOKEN', 'LEASEHOLD_READ_TOKEN', 'LEASEHOLD_METRICS_TOKEN', 'LEASEHOLD_COOKIE_SECRET']) {
        assert.throws(() => readConfig({}, { [env]: token }), (e: unknown) => short(e, env), `${env} ${token}`);
      }
    }
    assert.equal(bearerChecker('a'.repeat(16))(`Bearer ${'a'.repeat(16)}`).ok, true, '16 characters are enough');
  });

  test('leasehold start with a short admin token exits 2 and says why', async () => {
    const r = await runLeasehold(['start', '--jobs', 'test/fixtures/jobs-valid.ts', '--port', '0'], { LEASEHOLD_ADMIN_TOKEN: 'changeme' });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr, 'leasehold: LEASEHOLD_ADMIN_TOKEN: a token needs at least 16 characters, so that it cannot be guessed (make one with: openssl rand -hex 32) (the value is not shown)\n');
  });
});

describe('safe defaults of leasehold start', () => {
  test('it listens on 127.0.0.1 unless told otherwise, and believes no proxy header unless told to', async () => {
    const config = readConfig({}, {});
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.trustProxy, false);
    assert.equal(readConfig({}, { HOST: '0.0.0.0' }).host, '0.0.0.0');
    assert.deepEqual(['true', '2', '10.0.0.1,10.0.0.0/8'].map((v) => readConfig({}, { LEASEHOLD_TRUST_PROXY: v }).trustProxy), [true, 2, '10.0.0.1,10.0.0.0/8']);
    assert.throws(() => readConfig({ 'trust-proxy': 'everyone' }, {}), /LEASEHOLD_TRUST_PROXY\/--trust-proxy: "everyone" is not true, false/);
    const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-valid.ts', '--port', '0', '--local'], { LEASEHOLD_SHUTDOWN_GRACE: '100ms' });
    try {
      const line = await node.waitFor((l) => l['msg'] !== undefined && /^HTTP listening/.test(String(l['msg'])), 15_000);
      assert.equal(line['host'], '127.0.0.1');
    } finally {
      node.kill('SIGTERM');
      await node.exited;
    }
  });
});

describe('no admin route without a configured token, in process', () => {
  let server: TestRedis;
  let admin: Redis;

  before(async () => {
    server = await startRedis();
    admin = server.client();
  });
  after(async () => {
    await server?.stop();
  });

  for (const configured of [undefined, ''] as const) {
    test(`adminToken ${JSON.stringify(configured)}: run, pause and resume are refused whatever is sent`, async () => {
      const prefix = `sec-noadmin-${configured === undefined ? 'u' : 'e'}`;
      const log = memoryLogger('debug');
      const runner = createRunner({ redisUrl: server.url, prefix, logger: log.logger, instanceId: 'sec-1', shutdownGrace: '100ms', ...(configured === undefined ? {} : { adminToken: configured }) });
      let manual = 0;
      runner.on('runStarted', (e) => {
        if (e.manual) manual++;
      });
      runner.add({ id: 'job', fixedRate: '1h', initialDelay: '1h', run: () => undefined });
      await runner.start();
      const app = Fastify({ loggerInstance: log.logger as FastifyBaseLogger });
      try {
        await app.register(runner.routes);
        for (const action of ['run', 'pause', 'resume']) {
          for (const authorization of [undefined, '', 'Bearer ', 'Bearer undefined', 'Bearer null', `Bearer ${TOKEN}`, 'Basic dTpw']) {
            const res = await app.inject({ method: 'POST', url: `/manage/jobs/job/${action}`, headers: authorization === undefined ? {} : { authorization } });
            assert.equal(res.statusCode, 403, `${action} with ${String(authorization)}: ${res.body}`);
            assert.match(res.body, /admin routes are disabled/);
          }
        }
        assert.equal(manual, 0, 'a run started');
        assert.deepEqual(await admin.hgetall(`${prefix}:settings`), {}, 'the settings hash was written');
      } finally {
        await app.close();
        await runner.stop();
      }
    });
  }
});

describe('no secret in any output of real processes at LOG_LEVEL=trace', () => {
  let server: TestRedis;
  let dir: string;
  let jobs: string;
  let url: string;

  before(async () => {
    server = await startRedis({ args: ['--requirepass', PASSWORD] });
    url = server.url;
    dir = await mkdtemp(join(tmpdir(), 'leasehold-security-'));
    jobs = join(dir, 'jobs.mjs');
    await writeFile(jobs, [
      'export default [',
      "  { id: 'tick', fixedRate: '200ms', run: (ctx) => ctx.log.trace('tick ran') },",
      "  { id: 'shared', scope: 'installation', fixedRate: '300ms', lease: '1s', run: () => {} },",
      "  { id: 'fails', fixedRate: '300ms', run: () => { throw new Error('upstream said no'); } },",
      '];',
    ].join('\n'));
  });

  after(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const secrets = [PASSWORD, TOKEN, WRONG_PASSWORD, encodeURIComponent(PASSWORD), Buffer.from(PASSWORD).toString('base64'), Buffer.from(TOKEN).toString('base64')];
  const assertNoSecret = (what: string, text: string): void => {
    for (const s of secrets) assert.ok(!text.includes(s), `${what} contains ${s}: ...${text.slice(Math.max(0, text.indexOf(s) - 300), text.indexOf(s) + 100)}`);
  };

  test('two nodes, admin calls with right and wrong tokens, Redis frozen, bad URLs, leasehold status', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const env = { REDIS_URL: url, LEASEHOLD_PREFIX: 'sec', LOG_LEVEL: 'trace', LEASEHOLD_SHUTDOWN_GRACE: '200ms' };
    const nodeA = spawnLeasehold(['start', '--jobs', jobs, '--host', '127.0.0.1', '--port', String(portA), '--instance-id', 'sec-a'], { ...env, LEASEHOLD_ADMIN_TOKEN: TOKEN });
    // A blank token is no token: this node refuses every admin call.
    const nodeB = spawnLeasehold(['start', '--jobs', jobs, '--host', '127.0.0.1', '--port', String(portB), '--instance-id', 'sec-b'], { ...env, LEASEHOLD_ADMIN_TOKEN: '   ' });
    const nodes: NodeProc[] = [nodeA, nodeB];
    try {
      await Promise.all(nodes.map((n) => n.waitFor((l) => String(l['msg']).startsWith('status: http://'), 15_000)));
      const call = async (port: number, method: string, path: string, authorization?: string): Promise<{ status: number; body: string }> => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: authorization === undefined ? {} : { authorization } });
        return { status: res.status, body: await res.text() };
      };
      const wrong = [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Bearer ${PASSWORD}`, `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}`, `Bearer ${'z'.repeat(300)}`, 'Bearer', `Token ${TOKEN}`];
      for (const action of ['pause', 'resume', 'run']) {
        const ok = await call(portA, 'POST', `/manage/jobs/tick/${action}`, `Bearer ${TOKEN}`);
        assert.ok(ok.status === 200 || ok.status === 202, `${action} with the token: ${ok.status} ${ok.body}`);
        for (const authorization of [undefined, ...wrong]) {
          const res = await call(portA, 'POST', `/manage/jobs/tick/${action}`, authorization);
          assert.ok(res.status === 401 || res.status === 403, `${action} with ${String(authorization).slice(0, 40)}: ${res.status}`);
          assertNoSecret(`the answer to ${action}`, res.body);
        }
        const refused = await call(portB, 'POST', `/manage/jobs/tick/${action}`, `Bearer ${TOKEN}`);
        assert.equal(refused.status, 403, `node B, ${action}: ${refused.body}`);
        assert.match(refused.body, /admin routes are disabled/);
      }
      for (const path of ['/manage/jobs', '/manage/jobs/tick', '/health', '/metrics']) assertNoSecret(path, (await call(portA, 'GET', path, `Bearer ${TOKEN}`)).body);
      // Error paths: Redis frozen longer than the command timeouts, then back.
      server.pause();
      await sleep(2_500);
      server.resume();
      await nodeA.waitFor((l) => /back/.test(String(l['msg'])) || l['outcome'] === 'succeeded', 10_000);
      assert.equal(nodeA.child.exitCode, null, 'node A exited');
    } finally {
      for (const n of nodes) n.kill('SIGTERM');
      await Promise.all(nodes.map((n) => n.exited));
    }
    const port = server.port;
    const others = await Promise.all([
      runLeasehold(['start', '--jobs', jobs, '--port', '0'], { REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:99999`, LEASEHOLD_ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'trace' }),
      runLeasehold(['start', '--jobs', jobs, '--port', '0'], { REDIS_URL: `redis://:${PASSWORD}%zz@127.0.0.1:${port}`, LEASEHOLD_ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'trace' }),
      runLeasehold(['start', '--jobs', jobs, '--port', '0'], { REDIS_URL: `ftp://leasehold:${PASSWORD}@127.0.0.1:${port}`, LEASEHOLD_ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'trace' }),
      runLeasehold(['start', '--jobs', jobs, '--port', '0'], { REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${port}`, LEASEHOLD_ADMIN_TOKEN: `two words ${TOKEN}`, LOG_LEVEL: 'trace' }),
      runLeasehold(['status'], { REDIS_URL: url, LEASEHOLD_PREFIX: 'sec' }),
      runLeasehold(['status', '--json', '--prefix', 'sec'], { REDIS_URL: url }),
      runLeasehold(['status'], { REDIS_URL: `redis://:${WRONG_PASSWORD}@127.0.0.1:${port}` }),
      runLeasehold(['status', '--redis-url', `redis://leasehold:${PASSWORD}@127.0.0.1:1`]),
    ]);
    const [invalidUrl, badEscape, badScheme, badToken, status, statusJson, wrongPassword, unreachable] = others;
    for (const r of [invalidUrl, badEscape, badScheme, badToken]) assert.equal(r?.code, 2, r?.stderr);
    assert.match(invalidUrl?.stderr ?? '', /redis:\/\/:\*\*\*@127\.0\.0\.1:99999/);
    assert.match(badToken?.stderr ?? '', /^leasehold: LEASEHOLD_ADMIN_TOKEN: /);
    assert.equal(status?.code, 0, status?.stderr);
    assert.match(status?.stdout ?? '', /tick/);
    assert.equal(statusJson?.code, 0, statusJson?.stderr);
    assert.equal(wrongPassword?.code, 1, wrongPassword?.stdout);
    assert.match(wrongPassword?.stderr ?? '', /redis:\/\/:\*\*\*@/);
    assert.equal(unreachable?.code, 1);

    // A wrong password against a live Redis, as a node: it keeps running, and says why without the password.
    const wrongNode = spawnLeasehold(['start', '--jobs', jobs, '--host', '127.0.0.1', '--port', '0', '--instance-id', 'sec-wrong'], { REDIS_URL: `redis://:${WRONG_PASSWORD}@127.0.0.1:${port}`, LEASEHOLD_ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'trace', LEASEHOLD_SHUTDOWN_GRACE: '100ms' });
    try {
      await wrongNode.waitFor((l) => /WRONGPASS|NOAUTH|invalid (username|password)/i.test(JSON.stringify(l)), 10_000);
    } finally {
      wrongNode.kill('SIGTERM');
      await wrongNode.exited;
    }

    const outputs: Array<[string, string]> = [
      ['node A stdout', nodeA.stdout()], ['node A stderr', nodeA.stderr()], ['node B stdout', nodeB.stdout()], ['node B stderr', nodeB.stderr()],
      ['wrong-password node stdout', wrongNode.stdout()], ['wrong-password node stderr', wrongNode.stderr()],
      ...others.flatMap((r, i): Array<[string, string]> => [[`run ${i} stdout`, r?.stdout ?? ''], [`run ${i} stderr`, r?.stderr ?? '']]),
    ];
    for (const [what, text] of outputs) assertNoSecret(what, text);
    // The logs were there to be searched: trace lines, the Redis URL with its password hidden, failed runs.
    const all = nodeA.lines;
    assert.ok(all.some((l) => l['level'] === 10), 'no trace line from node A');
    assert.ok(nodeA.stdout().includes(`redis://:***@127.0.0.1:${port}`), 'node A does not log where Redis is');
    assert.ok(all.some((l) => l['jobId'] === 'fails' && l['outcome'] === 'failed'), 'no failed run logged');
    assert.ok(nodeA.stdout().length > 5_000, `only ${nodeA.stdout().length} characters of log`);
    // The jobs module itself is no place for secrets either, but it is not what this checks.
    assert.ok(!(await readFile(jobs, 'utf8')).includes(PASSWORD));
  });
});
