/**
 * Cancel a run (SPEC 5): `POST /manage/jobs/:id/cancel` on any node aborts the job's run in
 * progress wherever it runs, with reason `cancelled`, recorded as outcome `cancelled`; 409 when
 * nothing runs. The same through `redis-cli PUBLISH <prefix>:control '{"type":"cancel",...}'`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { createRunner, isLeaseholdError, type JobContext, type RunEndedEvent } from '../src/index.js';
import { keys as keyNames } from '../src/redis/keys.js';
import { Scheduler } from '../src/runner/runner.js';
import { createNode, type StatusNode } from '../src/create/index.js';
import { ManualClock } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';
import { until } from './helpers/wait.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const PREFIX = 'cancel-test';
const k = keyNames(PREFIX);
const TOKEN = 'cancel-admin-token-0123456789';


describe('runner.cancel', () => {
  it('aborts the run with reason cancelled, records it as cancelled, and the job runs again at its next tick', async () => {
    const clock = new ManualClock(Date.parse('2026-03-02T10:00:00Z'));
    const runner = createRunner({ local: true, clock, logger: memoryLogger().logger, instanceId: 'n', shutdownGrace: 0 });
    const ended: RunEndedEvent[] = [];
    const reasons: unknown[] = [];
    runner.on('runEnded', (e) => ended.push(e));
    runner.add({
      id: 'long', fixedRate: '10s', initialDelay: '1s',
      run: (ctx: JobContext) => new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => { reasons.push(ctx.signal.reason); resolve(); })),
    });
    await runner.start();
    await clock.advance(2_000);
    assert.equal(runner.cancel('long'), true);
    assert.equal(runner.cancel('long'), false, 'already cancelled');
    await clock.advance(100);
    assert.deepEqual(ended.map((e) => e.outcome), ['cancelled']);
    assert.ok(isLeaseholdError(reasons[0], 'cancelled'));
    await clock.advance(10_000);
    assert.equal(runner.cancel('long'), true, 'the next tick ran');
    assert.equal(runner.cancel('nope'), false);
    await runner.stop();
  });
});

describe('cancel across the cluster', () => {
  let server: TestRedis;
  let cli: Redis;
  const nodes: Array<{ core: Scheduler; layer: StatusNode; ended: RunEndedEvent[] }> = [];
  let app: FastifyInstance;
  const auth = { authorization: `Bearer ${TOKEN}` };

  before(async () => {
    server = await startRedis();
    cli = server.client();
    const { logger } = memoryLogger();
    for (const id of ['a', 'b']) {
      const layer = createNode({ instanceId: id, logger, shutdownGraceMs: 200, redis: { url: server.url }, prefix: PREFIX, coordinator: 'redis', adminToken: TOKEN });
      const core = layer.core;
      // Only node b has the long job: a cancel sent to node a must reach it.
      if (id === 'b') core.add({ id: 'long', scope: 'installation', fixedRate: '1h', run: (ctx: JobContext) => new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r())) });
      core.add({ id: 'idle', fixedRate: '1h', initialDelay: '1h', run: () => undefined });
      const ended: RunEndedEvent[] = [];
      core.on('runEnded', (e) => ended.push(e));
      await layer.start();
      core.start();
      nodes.push({ core, layer, ended });
    }
    app = Fastify();
    await app.register((nodes[0] as { layer: StatusNode }).layer.routes);
  });
  after(async () => {
    await app.close();
    for (const n of nodes) {
      await n.core.stop();
      await n.layer.stop();
    }
    await server.stop();
  });

  it('POST /manage/jobs/:id/cancel on another node aborts the run where it runs; 409 when none runs; the admin token is needed', async () => {
    const b = nodes[1] as (typeof nodes)[number];
    await until('the long run started on b', () => b.core.job('long')?.running !== undefined);
    assert.equal((await app.inject({ method: 'POST', url: '/manage/jobs/long/cancel' })).statusCode, 401);
    const res = await app.inject({ method: 'POST', url: '/manage/jobs/long/cancel', headers: auth });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json<{ instances: string[] }>().instances, ['b']);
    await until('recorded', () => b.ended.some((e) => e.outcome === 'cancelled'));
    await b.layer.flush();
    assert.equal(await cli.hget(k.stats('long'), 'cancelled'), '1');
    assert.equal(await cli.hget(k.stats('long'), 'lastOutcome'), 'cancelled');
    assert.equal(await cli.hget(k.stats('long'), 'streak'), '0', 'a cancel is no failure');
    const none = await app.inject({ method: 'POST', url: '/manage/jobs/idle/cancel', headers: auth });
    assert.equal(none.statusCode, 409);
    assert.match(none.json<{ message: string }>().message, /no run in progress/);
    assert.equal((await app.inject({ method: 'POST', url: '/manage/jobs/unknown-job/cancel', headers: auth })).statusCode, 404);
  });

  it('redis-cli PUBLISH <prefix>:control \'{"type":"cancel","jobId":...}\' cancels too', async () => {
    const b = nodes[1] as (typeof nodes)[number];
    const before = b.ended.filter((e) => e.outcome === 'cancelled').length;
    await cli.hset(k.settings, 'long.fixedRate', '1s'); // a new run soon
    await until('a new long run', () => b.core.job('long')?.running !== undefined && b.core.job('long')?.running?.aborted === undefined, 5_000);
    await cli.publish(k.control, JSON.stringify({ type: 'cancel', jobId: 'long' }));
    await until('cancelled through the channel', () => b.ended.filter((e) => e.outcome === 'cancelled').length > before);
    await cli.hdel(k.settings, 'long.fixedRate');
  });
});
