/**
 * The status page's routes through `fastify.inject()` over a real runner and a real
 * redis-server (SPEC 5): the page and its files (Content-Security-Policy without inline
 * script, relative URLs, caching), the event stream's headers and first events, the access
 * endpoint, and the token rules: reads open without `LEASEHOLD_READ_TOKEN`; with it, a bearer
 * header or the sign-in cookie (HttpOnly, SameSite=Strict, not the token); `/health/*` open;
 * `/metrics` behind its own token. No token in any log line. Needs `npm run build` (the
 * page's files).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { Scheduler } from '../src/runner/runner.js';
import { createNode, createRunner, type StatusNode } from '../src/create/index.js';
import { localRoutes } from '../src/http/local.js';
import { isLeaseholdError } from '../src/errors.js';
import { readConfig } from '../src/cli/config.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const ADMIN = 'Admin-t0ken-never-logged';
const READ = 'Read-t0ken-never-logged';
const METRICS = 'Metrics-t0ken-never-logged';

interface Node {
  core: Scheduler;
  layer: StatusNode;
  app: FastifyInstance;
  stop(): Promise<void>;
}

async function node(opts: { url: string; prefix: string; logger: ReturnType<typeof memoryLogger>['logger']; adminToken?: string; readToken?: string; metricsToken?: string }): Promise<Node> {
  const { logger, url, prefix, adminToken, readToken, metricsToken } = opts;
  const layer = createNode({ instanceId: `ui-${opts.prefix}`, logger, shutdownGraceMs: 200, redis: { url }, prefix, ...(adminToken ? { adminToken } : {}), ...(readToken ? { readToken } : {}), ...(metricsToken ? { metricsToken } : {}) });
  const core = layer.core;
  core.add({ id: 'tick', fixedRate: '300ms', run: () => undefined });
  core.add({ id: 'report.daily', scope: 'installation', description: '<b>not bold</b>', cron: '0 0 8 * * MON-FRI', zone: 'Europe/Berlin', run: () => undefined });
  await layer.start();
  core.start();
  const app = Fastify({ loggerInstance: logger as FastifyBaseLogger });
  await app.register(layer.routes);
  await app.ready();
  return {
    core,
    layer,
    app,
    async stop() {
      await core.stop();
      await layer.stop();
      await app.close();
    },
  };
}

/** Reads an event stream over a real socket until `done` says enough, then aborts. */
function readStream(port: number, path: string, done: (text: string) => boolean, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; text: string; ended: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      let text = '';
      const finish = (ended: boolean): void => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, ended });
        req.destroy();
      };
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        if (done(text)) finish(false);
      });
      res.on('end', () => finish(true));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => reject(new Error(`no answer on ${path} within 10 s`)));
    req.end();
  });
}

describe('status page routes', () => {
  let server: TestRedis;
  const log = memoryLogger();
  let open: Node;
  let guarded: Node;

  before(async () => {
    server = await startRedis();
    open = await node({ url: server.url, prefix: 'ui-open', logger: log.logger });
    guarded = await node({ url: server.url, prefix: 'ui-guarded', logger: log.logger, adminToken: ADMIN, readToken: READ, metricsToken: METRICS });
  });
  after(async () => {
    await open.stop();
    await guarded.stop();
    await server.stop();
    const text = log.text();
    for (const t of [ADMIN, READ, METRICS]) assert.ok(!text.includes(t), 'no token appears in a log line');
  });

  it('GET /manage/ui: the page with a Content-Security-Policy that allows no inline script, and relative URLs only', async () => {
    const res = await open.app.inject({ method: 'GET', url: '/manage/ui' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['cache-control'], 'no-store');
    const html = res.body;
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1, 'one script');
    assert.match(scripts[0]?.[1] ?? '', /src="ui\/app\.js\?v=[\w-]+"/, 'from a relative URL');
    assert.equal(scripts[0]?.[2], '', 'nothing inline');
    assert.doesNotMatch(html, /(src|href)="\//, 'no absolute path: it works under a path prefix');
    assert.doesNotMatch(html, /https?:\/\//, 'no CDN');
    const slash = await open.app.inject({ method: 'GET', url: '/manage/ui/' });
    assert.equal(slash.statusCode, 200);
    assert.match(slash.body, /src="app\.js\?v=/, 'from /manage/ui/ the files are beside the page');
  });

  it('the page\'s files: versioned URLs cached for good, gzip when accepted, 304 on a matching ETag, 404 for others', async () => {
    const page = await open.app.inject({ method: 'GET', url: '/manage/ui' });
    const js = /src="ui\/(app\.js\?v=[\w-]+)"/.exec(page.body)?.[1] ?? '';
    const css = /href="ui\/(app\.css\?v=[\w-]+)"/.exec(page.body)?.[1] ?? '';
    const res = await open.app.inject({ method: 'GET', url: `/manage/ui/${js}` });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/javascript/);
    assert.match(String(res.headers['cache-control']), /immutable/);
    assert.ok(res.body.length > 1_000);
    const style = await open.app.inject({ method: 'GET', url: `/manage/ui/${css}` });
    assert.match(String(style.headers['content-type']), /^text\/css/);
    const gz = await open.app.inject({ method: 'GET', url: `/manage/ui/${js}`, headers: { 'accept-encoding': 'gzip, br' } });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.ok(gz.rawPayload.length < res.rawPayload.length / 2);
    const again = await open.app.inject({ method: 'GET', url: '/manage/ui/app.js', headers: { 'if-none-match': String(res.headers.etag) } });
    assert.equal(again.statusCode, 304);
    const unversioned = await open.app.inject({ method: 'GET', url: '/manage/ui/app.js' });
    assert.equal(unversioned.headers['cache-control'], 'no-cache');
    const missing = await open.app.inject({ method: 'GET', url: '/manage/ui/secret.txt' });
    assert.equal(missing.statusCode, 404);
  });

  it('GET /manage/access says whether admin is enabled and reads protected', async () => {
    assert.deepEqual((await open.app.inject({ method: 'GET', url: '/manage/access' })).json(), { adminEnabled: false, readProtected: false, metricsProtected: false });
    const res = await guarded.app.inject({ method: 'GET', url: '/manage/access', headers: { authorization: `Bearer ${READ}` } });
    assert.deepEqual(res.json(), { adminEnabled: true, readProtected: true, metricsProtected: true });
  });

  it('GET /manage/events: an event stream with retry, the whole status first, and an end when fastify closes', async () => {
    const n = await node({ url: server.url, prefix: 'ui-events', logger: log.logger });
    await n.app.listen({ host: '127.0.0.1', port: 0 });
    const address = n.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const first = await readStream(port, '/manage/events', (t) => t.includes('event: snapshot') && t.endsWith('\n\n'));
    assert.equal(first.status, 200);
    assert.match(String(first.headers['content-type']), /^text\/event-stream/);
    assert.match(String(first.headers['cache-control']), /no-cache/);
    assert.equal(first.headers['x-accel-buffering'], 'no');
    assert.match(first.text, /^retry: \d+\n/);
    const data = /event: snapshot\ndata: (.*)\n\n/.exec(first.text)?.[1] ?? '';
    const snapshot = JSON.parse(data) as { jobs: Array<{ id: string; description: string | null }> };
    assert.deepEqual(snapshot.jobs.map((j) => j.id).sort(), ['report.daily', 'tick']);
    // A run that ends is sent as a change.
    const changed = await readStream(port, '/manage/events', (t) => /event: changes\ndata: .*"id":"tick"/.test(t));
    assert.equal(changed.ended, false);
    // Closing the server ends an open stream: close does not hang on it, and the stream ends.
    const streaming = readStream(port, '/manage/events', () => false);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    await n.app.close();
    assert.ok(Date.now() - t0 < 2_000, 'fastify closed without waiting for the stream');
    assert.equal((await streaming).ended, true);
    await n.core.stop();
    await n.layer.stop();
  });

  it('the runner\'s stop() ends the event streams (and later ones get 503), so no socket is left', async () => {
    const redisUrl = server.url;
    const runner = createRunner({ redisUrl, prefix: 'ui-stop', instanceId: 'ui-stop', logger: log.logger, shutdownGrace: '200ms' });
    runner.add({ id: 'tick', fixedRate: '300ms', run: () => undefined });
    await runner.start();
    const app = Fastify({ forceCloseConnections: false });
    await app.register(runner.routes);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const streaming = readStream(port, '/manage/events', () => false);
    await new Promise((r) => setTimeout(r, 300));
    await runner.stop();
    assert.equal((await streaming).ended, true, 'stop() ended the stream');
    const late = await readStream(port, '/manage/events', () => false);
    assert.equal(late.status, 503);
    await app.close();
  });

  it('without a read token reads are open; with one, GET /manage/* needs a bearer header or the sign-in cookie', async () => {
    for (const url of ['/manage/jobs', '/manage/jobs/tick', '/manage/access']) {
      assert.equal((await open.app.inject({ method: 'GET', url })).statusCode, 200, url);
      const none = await guarded.app.inject({ method: 'GET', url });
      assert.equal(none.statusCode, 401, url);
      assert.equal(none.headers['www-authenticate'], 'Bearer');
      assert.doesNotMatch(none.body, /tick|report/, 'nothing revealed');
      assert.equal((await guarded.app.inject({ method: 'GET', url, headers: { authorization: 'Bearer nope' } })).statusCode, 403, url);
      assert.equal((await guarded.app.inject({ method: 'GET', url, headers: { authorization: 'Basic x' } })).statusCode, 401, url);
      assert.equal((await guarded.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${READ}` } })).statusCode, 200, url);
      assert.equal((await guarded.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ADMIN}` } })).statusCode, 200, `${url}: the admin token reads too`);
      assert.equal((await guarded.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${METRICS}` } })).statusCode, 403, `${url}: the metrics token does not`);
    }
    const events = await guarded.app.inject({ method: 'GET', url: '/manage/events' });
    assert.equal(events.statusCode, 401, 'the event stream is guarded too');
    const file = await guarded.app.inject({ method: 'GET', url: '/manage/ui/app.js' });
    assert.equal(file.statusCode, 401, 'and the page\'s files');
  });

  it('the page without the cookie is the sign-in form (no script); the sign-in sets an HttpOnly, SameSite=Strict cookie that is not the token', async () => {
    const login = await guarded.app.inject({ method: 'GET', url: '/manage/ui' });
    assert.equal(login.statusCode, 401);
    assert.match(login.body, /<form method="post" action="login"/);
    assert.doesNotMatch(login.body, /<script/);
    const csp = String(login.headers['content-security-policy']);
    assert.doesNotMatch(csp, /script-src|unsafe-inline/);
    assert.match(csp, /style-src 'sha256-/);
    const fromSlash = await guarded.app.inject({ method: 'GET', url: '/manage/ui/' });
    assert.match(fromSlash.body, /action="\.\.\/login"/);

    const wrong = await guarded.app.inject({ method: 'POST', url: '/manage/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'token=nope' });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.headers['set-cookie'], undefined);
    assert.match(wrong.body, /not the read token/);

    const ok = await guarded.app.inject({ method: 'POST', url: '/manage/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${encodeURIComponent(READ)}` });
    assert.equal(ok.statusCode, 303);
    assert.equal(ok.headers.location, 'ui');
    const cookie = String(ok.headers['set-cookie']);
    assert.match(cookie, /^leasehold_read=\d+\.[\w-]+; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    assert.ok(!cookie.includes(READ), 'the cookie is not the token');
    const pair = cookie.split(';')[0] ?? '';
    const page = await guarded.app.inject({ method: 'GET', url: '/manage/ui', headers: { cookie: `other=1; ${pair}` } });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /src="ui\/app\.js/);
    assert.equal((await guarded.app.inject({ method: 'GET', url: '/manage/jobs', headers: { cookie: pair } })).statusCode, 200);
    assert.equal((await guarded.app.inject({ method: 'GET', url: '/manage/jobs', headers: { cookie: 'leasehold_read=forged' } })).statusCode, 401);

    const json = await guarded.app.inject({ method: 'POST', url: '/manage/login', payload: { token: READ } });
    assert.equal(json.statusCode, 303, 'a JSON body works as well');
    const out = await guarded.app.inject({ method: 'POST', url: '/manage/logout' });
    assert.equal(out.statusCode, 303);
    assert.match(String(out.headers['set-cookie']), /^leasehold_read=; Max-Age=0; HttpOnly; SameSite=Strict$/);
  });

  it('/health stays open for probes; /metrics is open without its token and needs it once configured', async () => {
    for (const url of ['/health', '/health/live', '/health/ready']) {
      assert.notEqual((await guarded.app.inject({ method: 'GET', url })).statusCode, 401, url);
    }
    assert.equal((await open.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
    const none = await guarded.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(none.statusCode, 401);
    assert.equal(none.headers['www-authenticate'], 'Bearer');
    assert.equal((await guarded.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${READ}` } })).statusCode, 403, 'the read token is not the metrics token');
    const ok = await guarded.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS}` } });
    assert.equal(ok.statusCode, 200);
    assert.match(ok.body, /leasehold_job_runs_total/);
  });

  it('the admin token still guards the actions; the read token does not open them', async () => {
    const res = await guarded.app.inject({ method: 'POST', url: '/manage/jobs/tick/pause', headers: { authorization: `Bearer ${READ}` } });
    assert.equal(res.statusCode, 403);
    const cancel = await open.app.inject({ method: 'POST', url: '/manage/jobs/tick/cancel', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.ok(cancel.statusCode >= 400 && cancel.statusCode < 500, 'cancel answers a 4xx the page shows as it is');
  });

  it('a runner without Redis guards its routes with the same tokens', async () => {
    const app = Fastify();
    await app.register(localRoutes, { instanceId: 'local', metrics: async () => ({ contentType: 'text/plain', text: 'x 1\n' }), readToken: READ, metricsToken: METRICS });
    assert.equal((await app.inject({ method: 'GET', url: '/manage/jobs' })).statusCode, 401);
    assert.equal((await app.inject({ method: 'GET', url: '/manage/ui' })).statusCode, 401);
    assert.equal((await app.inject({ method: 'GET', url: '/manage/jobs', headers: { authorization: `Bearer ${READ}` } })).statusCode, 503);
    assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
    assert.equal((await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS}` } })).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    await app.close();
  });

  it('a token no header can carry is refused with a message that names the option and not the value', () => {
    for (const key of ['readToken', 'metricsToken'] as const) {
      assert.throws(
        () => createRunner({ [key]: 'has a space', logger: log.logger }),
        (err: unknown) => isLeaseholdError(err) && err.code === 'invalidToken' && err.message.startsWith(key) && !err.message.includes('has a space'),
      );
    }
    for (const env of ['LEASEHOLD_READ_TOKEN', 'LEASEHOLD_METRICS_TOKEN']) {
      assert.throws(
        () => readConfig({}, { [env]: 'not\u00e9ascii' }),
        (err: unknown) => isLeaseholdError(err) && err.message.startsWith(`${env}:`) && !err.message.includes('ascii'),
      );
    }
    const config = readConfig({}, { LEASEHOLD_READ_TOKEN: READ, LEASEHOLD_METRICS_TOKEN: METRICS });
    assert.equal(config.readToken, READ);
    assert.equal(config.metricsToken, METRICS);
  });
});
