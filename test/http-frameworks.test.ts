/**
 * The status routes in any framework: one suite of requests (the status, one job, admin
 * actions, health, metrics, the status page, its event stream and MCP, with and without their
 * tokens) run against the runner's fastify plugin and against the same runner's routes
 * mounted in Express with `leasehold/express`: the same statuses, headers and answers. And
 * what only Express has: a path the routes do not take goes on to the app, under a mount path
 * too, and a body parser mounted first does not stall the admin routes.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { createRunner, defineJob, type Runner } from '../src/index.js';
import { leaseholdExpress, type LeaseholdMiddleware } from '../src/express/index.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const ADMIN = 'admin-T0ken-of-the-frameworks';
const READ = 'read-T0ken-of-the-frameworks';
const METRICS = 'metrics-T0ken-of-the-frameworks';

let redis: TestRedis;
let runner: Runner;
before(async () => {
  redis = await startRedis();
  runner = createRunner({ redisUrl: redis.url, prefix: 'frameworks', instanceId: 'web-1', adminToken: ADMIN, readToken: READ, metricsToken: METRICS, logger: undefined });
  runner.add(defineJob({ id: 'report.daily', scope: 'installation', cron: '0 0 3 * * *', run: () => undefined }));
  await runner.start();
});
after(async () => {
  await runner.stop();
  await redis.stop();
});

interface Served {
  readonly base: string;
  close(): Promise<void>;
}

const listen = (server: Server): Promise<string> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

const FRAMEWORKS: Record<string, () => Promise<Served>> = {
  async fastify() {
    const app: FastifyInstance = Fastify({ routerOptions: { maxParamLength: 256 } });
    await app.register(runner.routes);
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    return { base, close: () => app.close() };
  },
  async express() {
    const app = express();
    const routes = await leaseholdExpress(runner);
    app.use(routes);
    const server = createServer(app);
    const base = await listen(server);
    return { base, close: () => closeExpress(routes, server) };
  },
};

async function closeExpress(routes: LeaseholdMiddleware, server: Server): Promise<void> {
  await routes.close();
  await new Promise((resolve) => server.close(resolve));
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

for (const [name, serve] of Object.entries(FRAMEWORKS)) {
  describe(`the status routes on ${name}`, () => {
    let served: Served;
    before(async () => {
      served = await serve();
    });
    after(async () => {
      await served.close();
    });
    const get = (path: string, headers: Record<string, string> = {}) => fetch(`${served.base}${path}`, { headers });
    const post = (path: string, headers: Record<string, string> = {}, body?: string) => fetch(`${served.base}${path}`, { method: 'POST', headers, ...(body === undefined ? {} : { body }) });

    it('the status needs the read token, and names the node that answered', async () => {
      const bare = await get('/manage/jobs');
      assert.equal(bare.status, 401);
      assert.equal(bare.headers.get('www-authenticate'), 'Bearer');
      assert.equal(bare.headers.get('x-leasehold-node'), 'web-1');
      assert.match(bare.headers.get('content-type') ?? '', /^application\/json/);
      const ok = await get('/manage/jobs', bearer(READ));
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-leasehold-node'), 'web-1');
      const status = (await ok.json()) as { jobs: Array<{ id: string }> };
      assert.deepEqual(status.jobs.map((j) => j.id), ['report.daily']);
    });

    it('one job, and a 404 problem for an unknown one', async () => {
      const job = await get('/manage/jobs/report.daily', bearer(READ));
      assert.equal(job.status, 200);
      assert.equal(((await job.json()) as { id: string }).id, 'report.daily');
      const missing = await get('/manage/jobs/nope', bearer(READ));
      assert.equal(missing.status, 404);
      assert.match(JSON.stringify(await missing.json()), /unknown job \\"nope\\"/);
    });

    it('admin actions take the admin token only', async () => {
      assert.equal((await post('/manage/jobs/report.daily/pause')).status, 401);
      assert.equal((await post('/manage/jobs/report.daily/pause', bearer(READ))).status, 403);
      const paused = await post('/manage/jobs/report.daily/pause', { ...bearer(ADMIN), 'content-type': 'application/json' }, '{}');
      assert.equal(paused.status, 200, await paused.clone().text());
      const resumed = await post('/manage/jobs/report.daily/resume', bearer(ADMIN));
      assert.equal(resumed.status, 200);
      const bad = await post('/manage/jobs/report.daily/resume', { ...bearer(ADMIN), 'content-type': 'application/json' }, '{"x":1}');
      assert.equal(bad.status, 400);
    });

    it('health is open; metrics need their token', async () => {
      const health = await get('/health/live');
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok', reasons: [] });
      const ready = await get('/health/ready');
      assert.equal(ready.status, 200);
      assert.equal((await get('/metrics')).status, 401);
      const metrics = await get('/metrics', bearer(METRICS));
      assert.equal(metrics.status, 200);
      assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(await metrics.text(), /^leasehold_/m);
    });

    it('the status page and its event stream', async () => {
      const page = await get('/manage/ui', bearer(READ));
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      const controller = new AbortController();
      const events = await fetch(`${served.base}/manage/events`, { headers: bearer(READ), signal: controller.signal });
      assert.equal(events.status, 200);
      assert.match(events.headers.get('content-type') ?? '', /^text\/event-stream/);
      const reader = events.body?.getReader();
      let text = '';
      while (!/^data:.*report\.daily/m.test(text)) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        text += new TextDecoder().decode(chunk.value);
      }
      assert.match(text, /^: leasehold status events$/m);
      assert.match(text, /^data:.*report\.daily/m, 'the first event has the status');
      controller.abort();
    });

    it('MCP answers with the read token', async () => {
      const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } });
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      assert.equal((await post('/mcp', headers, initialize)).status, 401);
      const ok = await post('/mcp', { ...headers, ...bearer(READ) }, initialize);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-leasehold-node'), 'web-1');
      assert.match(await ok.text(), /"serverInfo"/);
    });
  });
}

describe('leasehold/express in an Express app', () => {
  it('passes what the routes do not take to the app, also under a mount path, and works after a body parser', async () => {
    const app = express();
    app.use(express.json());
    const routes = await leaseholdExpress(runner);
    app.use('/ops', routes);
    app.get('/own', (_req, res) => {
      res.send('the app');
    });
    const server = createServer(app);
    const base = await listen(server);
    try {
      assert.equal(await (await fetch(`${base}/own`)).text(), 'the app');
      assert.equal((await fetch(`${base}/nothing`)).status, 404);
      assert.equal((await fetch(`${base}/ops/nothing`)).status, 404);
      const health = await fetch(`${base}/ops/health/live`);
      assert.equal(health.status, 200);
      assert.equal(health.headers.get('x-leasehold-node'), 'web-1');
      const paused = await fetch(`${base}/ops/manage/jobs/report.daily/pause`, { method: 'POST', headers: { ...bearer(ADMIN), 'content-type': 'application/json' }, body: '{}' });
      assert.equal(paused.status, 200);
      assert.equal((await fetch(`${base}/ops/manage/jobs/report.daily/resume`, { method: 'POST', headers: bearer(ADMIN) })).status, 200);
    } finally {
      await closeExpress(routes, server);
    }
  });
});
