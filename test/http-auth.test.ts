/**
 * Guessing a token does not pay, and a signed-in browser can be signed out (SPEC 5): failed
 * token attempts are counted in `leasehold_auth_failures_total{route}`, logged at most once a
 * minute per client with their count, and a client over 20 a minute is answered 429; the read
 * cookie is `Secure` when the request came over TLS (through a trusted proxy too), expires,
 * and is revoked by changing its own secret; `POST /mcp` refuses browser origins it does not
 * know (DNS rebinding). A real node over a real redis-server, through `fastify.inject()`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { createNode, type StatusNode } from '../src/create/index.js';
import { AuthFailures, FAILURE_LIMIT, type AuthFailureReport } from '../src/http/auth-failures.js';
import { READ_COOKIE_MAX_AGE_S, readAccess } from '../src/http/auth.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const ADMIN = 'auth-admin-token-0123456789';
const READ = 'auth-read-token-0123456789';
const METRICS = 'auth-metrics-token-0123456789';
const SECRET = 'auth-cookie-secret-0123456789';

interface Node {
  layer: StatusNode;
  app: FastifyInstance;
  log: ReturnType<typeof memoryLogger>;
  stop(): Promise<void>;
}

async function node(url: string, prefix: string, opts: { cookieSecret?: string; trustProxy?: boolean; mcpAllowedOrigins?: string[] } = {}): Promise<Node> {
  const log = memoryLogger();
  const layer = createNode({ instanceId: prefix, logger: log.logger, shutdownGraceMs: 200, redis: { url }, prefix, adminToken: ADMIN, readToken: READ, metricsToken: METRICS, ...opts });
  layer.core.add({ id: 'job', fixedRate: '1h', initialDelay: '1h', run: () => undefined });
  await layer.start();
  layer.core.start();
  const app = Fastify({ loggerInstance: log.logger as FastifyBaseLogger, trustProxy: opts.trustProxy ?? false });
  await app.register(layer.routes);
  await app.ready();
  return {
    layer,
    app,
    log,
    async stop() {
      await app.close();
      await layer.stop();
    },
  };
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

async function metric(app: FastifyInstance, route: string): Promise<number> {
  const text = (await app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS) })).body;
  const line = text.split('\n').find((l) => l.startsWith(`leasehold_auth_failures_total{route="${route}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe('failed token attempts', () => {
  let server: TestRedis;
  let n: Node;
  before(async () => {
    server = await startRedis();
    n = await node(server.url, 'auth-fail');
  });
  after(async () => {
    await n?.stop();
    await server?.stop();
  });

  it('are counted by route, logged once with their count, and a client over 20 a minute gets 429 while others go on', async () => {
    const from = (remoteAddress: string, url: string, headers: Record<string, string>, method: 'GET' | 'POST' = 'POST') => n.app.inject({ method, url, headers, remoteAddress });
    for (let i = 0; i < FAILURE_LIMIT; i++) {
      const res = await from('10.0.0.7', '/manage/jobs/job/pause', bearer(`${ADMIN}-guess-${i}`));
      assert.equal(res.statusCode, 403, `attempt ${i + 1}`);
    }
    const blocked = await from('10.0.0.7', '/manage/jobs/job/pause', bearer(`${ADMIN}-guess-x`));
    assert.equal(blocked.statusCode, 429);
    assert.ok(Number(blocked.headers['retry-after']) >= 1 && Number(blocked.headers['retry-after']) <= 60, String(blocked.headers['retry-after']));
    assert.match(blocked.json<{ message: string }>().message, /too many failed token attempts/);
    // Even the right token waits: guessing it does not pay.
    assert.equal((await from('10.0.0.7', '/manage/jobs/job/pause', bearer(ADMIN))).statusCode, 429);
    assert.equal((await from('10.0.0.7', '/manage/jobs', bearer(READ), 'GET')).statusCode, 429);
    // Another client is not concerned.
    assert.equal((await from('10.0.0.8', '/manage/jobs/job/resume', bearer(ADMIN))).statusCode, 200);
    // A missing token is no attempt: it is not counted.
    assert.equal((await from('10.0.0.9', '/manage/jobs/job/pause', {})).statusCode, 401);

    assert.equal(await metric(n.app, '/manage/jobs/:id/pause'), FAILURE_LIMIT);
    const lines = n.log.lines.filter((l) => l['client'] === '10.0.0.7');
    assert.equal(lines.length, 1, 'one line a minute per client');
    assert.equal(lines[0]?.['failures'], 1);
    assert.equal(lines[0]?.['route'], '/manage/jobs/:id/pause');
    assert.ok(!n.log.text().includes(`${ADMIN}-guess`), 'no token offered is logged');

    for (const [url, headers] of [['/manage/jobs', bearer('a-wrong-read-token-0000')], ['/metrics', bearer('a-wrong-metrics-token-00')]] as const) {
      assert.equal((await from('10.0.1.1', url, headers, 'GET')).statusCode, 403, url);
    }
    const login = await n.app.inject({ method: 'POST', url: '/manage/login', payload: { token: 'a-wrong-read-token-0000' }, remoteAddress: '10.0.1.1' });
    assert.equal(login.statusCode, 401);
    const mcp = await n.app.inject({ method: 'POST', url: '/mcp', headers: { ...bearer('a-wrong-read-token-0000'), 'content-type': 'application/json' }, payload: {}, remoteAddress: '10.0.1.1' });
    assert.equal(mcp.statusCode, 403);
    for (const route of ['/manage/jobs', '/metrics', '/manage/login', '/mcp']) assert.equal(await metric(n.app, route), 1, route);
  });

  it('are logged at most once a minute per client, with the count since the last line', () => {
    let now = 0;
    const reports: AuthFailureReport[] = [];
    const failures = new AuthFailures({ now: () => now, report: (r) => reports.push(r) });
    for (let i = 0; i < 5; i++) failures.fail('a', '/r');
    now = 30_000;
    for (let i = 0; i < 30; i++) failures.fail('a', '/r');
    assert.equal(failures.retryAfter('a'), 30, 'blocked until the minute that began with the first failure is over');
    now = 61_000;
    assert.equal(failures.retryAfter('a'), 0, 'a new minute');
    failures.fail('a', '/r');
    assert.deepEqual(reports.map((r) => [r.failures, r.blocked]), [[1, false], [35, false]]);
    assert.equal(failures.totals().get('/r'), 36);
  });
});

describe('the read cookie', () => {
  let server: TestRedis;
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    await server?.stop();
  });

  const signIn = async (app: FastifyInstance, headers: Record<string, string> = {}): Promise<string> => {
    const res = await app.inject({ method: 'POST', url: '/manage/login', payload: { token: READ }, headers });
    assert.equal(res.statusCode, 303);
    return String(res.headers['set-cookie']);
  };

  it('is Secure over TLS, through a trusted proxy too, and not for a forwarded header nobody trusts', async () => {
    const direct = await node(server.url, 'cookie-direct');
    const proxied = await node(server.url, 'cookie-proxied', { trustProxy: true });
    try {
      assert.doesNotMatch(await signIn(direct.app), /Secure/);
      assert.doesNotMatch(await signIn(direct.app, { 'x-forwarded-proto': 'https' }), /Secure/, 'anyone can send the header');
      assert.match(await signIn(proxied.app, { 'x-forwarded-proto': 'https' }), /; Secure$/);
      assert.doesNotMatch(await signIn(proxied.app, { 'x-forwarded-proto': 'http' }), /Secure/);
    } finally {
      await direct.stop();
      await proxied.stop();
    }
  });

  it('is revoked by changing its secret, without changing the read token', async () => {
    const before = await node(server.url, 'cookie-secret', { cookieSecret: SECRET });
    let pair: string;
    try {
      pair = (await signIn(before.app)).split(';')[0] ?? '';
      assert.equal((await before.app.inject({ method: 'GET', url: '/manage/jobs', headers: { cookie: pair } })).statusCode, 200);
    } finally {
      await before.stop();
    }
    const rotated = await node(server.url, 'cookie-secret', { cookieSecret: `${SECRET}-rotated` });
    try {
      const res = await rotated.app.inject({ method: 'GET', url: '/manage/jobs', headers: { cookie: pair } });
      assert.equal(res.statusCode, 401);
      assert.match(res.json<{ message: string }>().message, /expired or was revoked/);
      assert.equal((await rotated.app.inject({ method: 'GET', url: '/manage/jobs', headers: bearer(READ) })).statusCode, 200, 'the token still reads');
    } finally {
      await rotated.stop();
    }
  });

  it('expires after 12 hours', () => {
    let now = Date.UTC(2025, 0, 1);
    const access = readAccess(READ, ADMIN, { now: () => now });
    const value = access.signIn(READ);
    assert.ok(value);
    const cookie = `leasehold_read=${value}`;
    assert.equal(access.check(undefined, cookie).ok, true);
    now += (READ_COOKIE_MAX_AGE_S - 1) * 1000;
    assert.equal(access.check(undefined, cookie).ok, true);
    now += 2_000;
    assert.equal(access.check(undefined, cookie).ok, false);
    const forged = `leasehold_read=${String(Math.floor(now / 1000) + 3600)}.${value.split('.')[1] ?? ''}`;
    assert.equal(access.check(undefined, forged).ok, false, 'a later expiry under the old signature');
  });
});

describe('POST /mcp and the Origin header', () => {
  let server: TestRedis;
  let n: Node;
  before(async () => {
    server = await startRedis();
    n = await node(server.url, 'mcp-origin', { mcpAllowedOrigins: ['https://Tools.Example.com:443'] });
  });
  after(async () => {
    await n?.stop();
    await server?.stop();
  });

  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
  const call = (origin?: string) =>
    n.app.inject({ method: 'POST', url: '/mcp', payload: initialize, headers: { ...bearer(READ), 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(origin === undefined ? {} : { origin }) } });

  it('refuses a browser origin it does not know, as a page that rebinds its name to a node would have', async () => {
    for (const origin of ['http://evil.example', 'http://evil.example:3000', 'null', 'https://tools.example.com.evil.example']) {
      const res = await call(origin);
      assert.equal(res.statusCode, 403, origin);
      assert.match(res.json<{ error: { message: string } }>().error.message, /LEASEHOLD_MCP_ALLOWED_ORIGINS/);
    }
  });

  it('answers without an Origin (an agent), from loopback origins and from the origins listed', async () => {
    for (const origin of [undefined, 'http://localhost:6274', 'http://127.0.0.1:3000', 'http://[::1]:8080', 'https://tools.example.com']) {
      const res = await call(origin);
      assert.equal(res.statusCode, 200, `${String(origin)}: ${res.body}`);
    }
  });

  it('refuses a list entry that is no origin', () => {
    assert.throws(() => createNode({ instanceId: 'x', logger: memoryLogger().logger, shutdownGraceMs: 0, mcpAllowedOrigins: ['tools.example.com'] }), /mcpAllowedOrigins: "tools\.example\.com" is not an origin/);
  });
});
