/**
 * `X-Leasehold-Node` (SPEC 5, docs/guide/deployment.md): every answer of a node's routes names the
 * node that gave it, its instance id, whatever the route and whatever the status code; so behind
 * a load balancer a caller sees which node answered. Through `fastify.inject()`, for the routes
 * of a runner with Redis (two nodes sharing one status) and of a runner without Redis.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type InjectOptions } from 'fastify';
import { createNode, createRunner, type StatusNode } from '../src/create/index.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const TOKEN = 'node-header-admin-token-0123';
const PREFIX = 'node-header-test';
const log = memoryLogger('warn');

interface Node {
  readonly app: FastifyInstance;
  stop(): Promise<void>;
}

async function statusNode(url: string, instanceId: string): Promise<Node> {
  const layer: StatusNode = createNode({ instanceId, logger: log.logger, shutdownGraceMs: 200, redis: { url }, prefix: PREFIX, adminToken: TOKEN });
  const core = layer.core;
  core.add({ id: 'tick', fixedRate: '1h', initialDelay: '1h', run: () => undefined });
  await layer.start();
  core.start();
  const app = Fastify({ loggerInstance: log.logger as FastifyBaseLogger });
  await app.register(layer.routes);
  await app.ready();
  return {
    app,
    async stop() {
      await app.close();
      await core.stop();
      await layer.stop();
    },
  };
}

/** Every kind of answer the status routes give: successes, refusals, validation and not found. */
const REQUESTS: ReadonlyArray<{ req: InjectOptions; status: number | readonly number[] }> = [
  { req: { method: 'GET', url: '/manage/jobs' }, status: 200 },
  { req: { method: 'GET', url: '/manage/jobs/tick' }, status: 200 },
  { req: { method: 'GET', url: '/manage/jobs/nope' }, status: 404 },
  { req: { method: 'GET', url: '/manage/jobs/bad%20id' }, status: 400 },
  { req: { method: 'POST', url: '/manage/jobs/tick/pause' }, status: 401 },
  { req: { method: 'POST', url: '/manage/jobs/tick/pause', headers: { authorization: 'Bearer wrong' } }, status: 403 },
  { req: { method: 'POST', url: '/manage/jobs/tick/resume', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: '{nope' }, status: 400 },
  { req: { method: 'POST', url: '/manage/jobs/tick/resume', headers: { authorization: `Bearer ${TOKEN}` } }, status: 200 },
  { req: { method: 'GET', url: '/health' }, status: [200, 503] },
  { req: { method: 'GET', url: '/health/live' }, status: 200 },
  { req: { method: 'GET', url: '/health/ready' }, status: 200 },
  { req: { method: 'GET', url: '/metrics' }, status: 200 },
];

describe('X-Leasehold-Node', () => {
  let redis: TestRedis;
  let a: Node;
  let b: Node;

  before(async () => {
    redis = await startRedis();
    a = await statusNode(redis.url, 'node-a');
    b = await statusNode(redis.url, 'node-b');
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await redis?.stop();
  });

  it('names the node in every answer of the status routes, whatever the status code', async () => {
    for (const { req, status } of REQUESTS) {
      const res = await a.app.inject(req);
      const what = `${String(req.method)} ${String(req.url)}`;
      assert.ok((Array.isArray(status) ? status : [status]).includes(res.statusCode), `${what}: ${res.statusCode} ${res.body}`);
      assert.equal(res.headers['x-leasehold-node'], 'node-a', what);
    }
  });

  it('differs between two nodes that answer the same status', async () => {
    const [fromA, fromB] = await Promise.all([a.app.inject({ method: 'GET', url: '/manage/jobs/tick' }), b.app.inject({ method: 'GET', url: '/manage/jobs/tick' })]);
    assert.equal(fromA.headers['x-leasehold-node'], 'node-a');
    assert.equal(fromB.headers['x-leasehold-node'], 'node-b');
    const counters = (body: string): unknown => {
      const { id, scope, schedule, runs, failed } = JSON.parse(body) as Record<string, unknown>;
      return { id, scope, schedule, runs, failed };
    };
    assert.deepEqual(counters(fromA.body), counters(fromB.body));
  });

  it('is the runner\'s instance id in the routes createRunner gives', async () => {
    const runner = createRunner({ redisUrl: redis.url, prefix: PREFIX, instanceId: 'runner-with-redis', logger: log.logger, shutdownGrace: 200 });
    await runner.start();
    const app = Fastify({ loggerInstance: log.logger as FastifyBaseLogger });
    try {
      await app.register(runner.routes);
      for (const url of ['/manage/jobs', '/health/live', '/manage/jobs/nope']) {
        const res = await app.inject({ method: 'GET', url });
        assert.equal(res.headers['x-leasehold-node'], 'runner-with-redis', url);
      }
    } finally {
      await app.close();
      await runner.stop();
    }
  });

  it('is the runner\'s instance id in the routes of a runner without Redis too', async () => {
    const runner = createRunner({ instanceId: 'runner-alone', logger: log.logger });
    const app = Fastify({ loggerInstance: log.logger as FastifyBaseLogger });
    try {
      await app.register(runner.routes);
      const health = await app.inject({ method: 'GET', url: '/health' });
      assert.equal(health.statusCode, 200);
      assert.equal(health.headers['x-leasehold-node'], 'runner-alone');
      for (const url of ['/manage/jobs', '/manage/jobs/tick']) {
        const res = await app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 503, url);
        assert.equal(res.headers['x-leasehold-node'], 'runner-alone', url);
      }
    } finally {
      await app.close();
    }
  });
});
