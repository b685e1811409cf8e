/**
 * Reads cannot load the Redis that holds the leases: `GET /manage/jobs/:id` hammered at a
 * thousand requests a second costs Redis at most one read of the job per second per node
 * (counted with `INFO commandstats` on a real redis-server), and an unknown id costs nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { createNode, type StatusNode } from '../src/create/index.js';
import type { JobDetail } from '../src/status/model.js';
import { memoryLogger } from './helpers/log.js';
import { commandsRun, startRedis, type TestRedis } from './helpers/redis.js';

const TOKEN = 'job-load-admin-token-0123456789';

/**
 * Sends `GET url` at `perSecond` requests a second for `ms` (in batches every 50 ms, so that
 * the node's own Redis replies are read between them); resolves to the answers' statuses.
 */
async function hammer(app: FastifyInstance, url: string, ms: number, perSecond = 1_000): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const batch = Math.ceil(perSecond / 20);
  const start = Date.now();
  for (let slot = 0; slot * 50 < ms; slot++) {
    const wait = start + slot * 50 - Date.now();
    if (wait > 0) await sleep(wait);
    const answers = await Promise.all(Array.from({ length: batch }, () => app.inject({ method: 'GET', url })));
    for (const r of answers) statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
  }
  return statuses;
}

describe('GET /manage/jobs/:id under load', () => {
  let server: TestRedis;
  let admin: Redis;
  let node: StatusNode;
  let app: FastifyInstance;

  before(async () => {
    server = await startRedis();
    admin = server.client();
    node = createNode({ instanceId: 'load-1', logger: memoryLogger().logger, shutdownGraceMs: 200, redis: { url: server.url }, prefix: 'load', adminToken: TOKEN });
    node.core.add({ id: 'hourly', cron: '0 0 * * * *', run: () => undefined });
    node.core.add({ id: 'daily', scope: 'installation', cron: '0 0 6 * * *', run: () => undefined });
    await node.start();
    node.core.start();
    app = Fastify();
    await app.register(node.routes);
    await app.ready();
  });
  after(async () => {
    await app.close();
    await node.stop();
    await server.stop();
  });

  it('a thousand requests a second read the job from Redis at most once a second', async () => {
    const first = await app.inject({ method: 'GET', url: '/manage/jobs/daily' });
    assert.equal(first.statusCode, 200);
    await sleep(200);
    await admin.config('RESETSTAT');
    const seconds = 3;
    const started = Date.now();
    const statuses = await hammer(app, '/manage/jobs/daily', seconds * 1000);
    const elapsed = (Date.now() - started) / 1000;
    const served = statuses.get(200) ?? 0;
    const total = [...statuses.values()].reduce((a, b) => a + b, 0);
    // On a loaded machine the hammering (in this process) can starve the node's own Redis
    // replies past their timeout: a few 503s then, never another status.
    assert.deepEqual([...statuses.keys()].filter((s) => s !== 200 && s !== 503), []);
    assert.ok(served >= 0.9 * total && total >= seconds * 1000, `${served} of ${total} requests answered 200 in ${elapsed.toFixed(1)} s`);
    const run = await commandsRun(admin);
    // LRANGE reads a job's recent runs: only GET /manage/jobs/:id sends it.
    const jobReads = run['lrange'] ?? 0;
    assert.ok(jobReads >= 1, 'the job is still read from Redis');
    assert.ok(jobReads <= Math.ceil(elapsed) + 1, `${jobReads} reads of the job in ${elapsed.toFixed(1)} s (${served} requests)`);
    const commands = Object.values(run).reduce((a, b) => a + b, 0);
    // About ten commands a read, plus the node's own heartbeat and stats: nowhere near one a request.
    assert.ok(commands < 40 * (Math.ceil(elapsed) + 2), `${commands} Redis commands for ${served} requests`);
  });

  it('an unknown id is answered 404 without a Redis command a request', async () => {
    await admin.config('RESETSTAT');
    const statuses = await hammer(app, '/manage/jobs/nope', 1_000);
    const refused = statuses.get(404) ?? 0;
    assert.ok(refused >= 500, `${refused} requests`);
    const total = Object.values(await commandsRun(admin)).reduce((a, b) => a + b, 0);
    assert.ok(total < 100, `${total} Redis commands for ${refused} requests for an unknown job`);
  });

  it('a change this node makes shows at once, and a new job of another node within seconds', async () => {
    const paused = await app.inject({ method: 'POST', url: '/manage/jobs/daily/pause', headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(paused.statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/manage/jobs/daily' })).json<JobDetail>().state, 'paused');
    const other = createNode({ instanceId: 'load-2', logger: memoryLogger().logger, shutdownGraceMs: 200, redis: { url: server.url }, prefix: 'load' });
    other.core.add({ id: 'elsewhere', cron: '0 0 * * * *', run: () => undefined });
    await other.start();
    try {
      const end = Date.now() + 5_000;
      let status = 0;
      while (status !== 200 && Date.now() < end) {
        status = (await app.inject({ method: 'GET', url: '/manage/jobs/elsewhere' })).statusCode;
        if (status !== 200) await sleep(100);
      }
      assert.equal(status, 200, 'a job registered by another node is found');
    } finally {
      await other.stop();
    }
  });
});
