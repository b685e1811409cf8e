/**
 * Jobs that leave the code: `runner.remove(id)` stops a job on a running node; a job that no
 * live node registers shows `orphaned` (not degraded: health stays 200), and `leasehold forget`
 * or `DELETE /manage/jobs/:id` (admin) remove its keys, refused while a live node has it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { createRunner, type RunEndedEvent, type RunStartedEvent } from '../src/index.js';
import { Scheduler } from '../src/runner/runner.js';
import { createNode, type StatusNode } from '../src/create/index.js';
import { keys as keyNames } from '../src/redis/keys.js';
import type { ClusterStatus } from '../src/status/model.js';
import { ManualClock, deferred } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const TOKEN = 'forget-admin-token-0123456789';
const T0 = Date.parse('2026-03-02T10:00:00.000Z');

describe('runner.remove', () => {
  it('stops a job\'s fires at once; a run in progress ends and is recorded, and a stop waits for it', async () => {
    const clock = new ManualClock(T0);
    const runner = createRunner({ local: true, clock, logger: memoryLogger().logger, instanceId: 'n', shutdownGrace: '10s' });
    const started: RunStartedEvent[] = [];
    const ended: RunEndedEvent[] = [];
    runner.on('runStarted', (e) => started.push(e));
    runner.on('runEnded', (e) => ended.push(e));
    const slow = deferred();
    runner.add({ id: 'gone', fixedRate: '1s', run: () => slow.promise });
    runner.add({ id: 'kept', fixedRate: '1s', run: () => {} });
    await runner.start();
    await clock.advance(500);
    assert.equal(runner.remove('gone'), true);
    assert.equal(runner.remove('gone'), false, 'unknown now');
    assert.deepEqual(runner.jobs().map((j) => j.id), ['kept']);
    await clock.advance(3_000);
    assert.equal(started.filter((e) => e.jobId === 'gone').length, 1, 'no fire after the removal');
    assert.ok(started.filter((e) => e.jobId === 'kept').length >= 3);
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await clock.advance(100);
    assert.equal(stopped, false, 'the stop waits for the removed job\'s run');
    slow.resolve();
    await clock.advance(100);
    await stopping;
    assert.equal(ended.find((e) => e.jobId === 'gone')?.outcome, 'succeeded');
  });
});

describe('orphaned jobs and forgetting them', () => {
  let server: TestRedis;
  let admin: Redis;
  let core: Scheduler;
  let layer: StatusNode;
  let app: FastifyInstance;
  const PREFIX = 'orphan-test';
  const k = keyNames(PREFIX);
  const auth = { authorization: `Bearer ${TOKEN}` };

  before(async () => {
    server = await startRedis();
    admin = server.client();
    const { logger } = memoryLogger();
    layer = createNode({ instanceId: 'live-node', logger, shutdownGraceMs: 100, redis: { url: server.url }, prefix: PREFIX, adminToken: TOKEN });
    core = layer.core;
    core.add({ id: 'kept', scope: 'installation', fixedRate: '100ms', run: () => undefined });
    await layer.start();
    core.start();
    app = Fastify();
    await app.register(layer.routes);
    // A job some node once ran, whose stats no node has written for 4 minutes: it left the code.
    const [s] = await admin.time();
    const old = new Date(Number(s) * 1000 - 4 * 60_000).toISOString();
    await admin.sadd(k.jobs, 'retired');
    await admin.hset(k.stats('retired'), { scope: 'installation', scheduleKind: 'fixedRate', schedule: '1s', intervalMs: '1000', runs: '7', succeeded: '1', failed: '6', streak: '6', createdAt: old, seenAt: old, lastSuccessAt: old });
    await admin.rpush(k.runs('retired'), '{"outcome":"failed"}');
    await admin.hset(k.state('retired'), 'tick', '1', 'fence', '7');
    await admin.hset(k.settings, 'retired.paused', 'true', 'kept.paused', 'false');
    await layer.flush();
  });

  after(async () => {
    await app.close();
    await core.stop();
    await layer.stop();
    await server.stop();
  });

  it('shows the job orphaned, with when it was last registered; health stays 200', async () => {
    for (let i = 0; i < 50 && !(await admin.hget(k.stats('kept'), 'seenAt')); i++) await new Promise((r) => setTimeout(r, 100));
    const status = (await app.inject({ method: 'GET', url: '/manage/jobs' })).json<ClusterStatus>();
    const retired = status.jobs.find((j) => j.id === 'retired');
    assert.equal(retired?.state, 'orphaned');
    assert.deepEqual(retired?.degradedReasons, [], 'a failing streak of a job no node runs is no degradation');
    assert.ok(retired?.lastRegisteredAt);
    assert.equal(status.jobs.find((j) => j.id === 'kept')?.state, 'ok');
    const health = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 200, health.body);
  });

  it('DELETE /manage/jobs/:id needs the admin token, refuses a job a live node registers, and removes an orphaned one', async () => {
    assert.equal((await app.inject({ method: 'DELETE', url: '/manage/jobs/retired' })).statusCode, 401);
    assert.equal((await app.inject({ method: 'DELETE', url: '/manage/jobs/retired', headers: { authorization: 'Bearer wrong' } })).statusCode, 403);
    const live = await app.inject({ method: 'DELETE', url: '/manage/jobs/kept', headers: auth });
    assert.equal(live.statusCode, 409);
    assert.match(live.json<{ message: string }>().message, /registered on this node/);
    assert.equal((await admin.exists(k.stats('kept'))), 1);
    assert.equal((await app.inject({ method: 'DELETE', url: '/manage/jobs/no-such-job', headers: auth })).statusCode, 404);
    const res = await app.inject({ method: 'DELETE', url: '/manage/jobs/retired', headers: auth });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await admin.exists(k.stats('retired'), k.runs('retired'), k.state('retired')), 0);
    assert.equal(await admin.sismember(k.jobs, 'retired'), 0);
    assert.equal(await admin.hget(k.settings, 'retired.paused'), null);
    assert.equal(await admin.hget(k.settings, 'kept.paused'), 'false', 'other jobs\' settings stay');
    const status = (await app.inject({ method: 'GET', url: '/manage/jobs' })).json<ClusterStatus>();
    assert.deepEqual(status.jobs.map((j) => j.id), ['kept']);
  });

  it('leasehold forget: refused while a live node writes the job, removes it once orphaned', async () => {
    const env = { REDIS_URL: server.url, LEASEHOLD_PREFIX: PREFIX };
    const refused = await runLeasehold(['forget', 'kept'], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /registered by a live node/);
    const [s] = await admin.time();
    const old = new Date(Number(s) * 1000 - 10 * 60_000).toISOString();
    await admin.sadd(k.jobs, 'old-job');
    await admin.hset(k.stats('old-job'), { scope: 'instance', seenAt: old, runs: '3' });
    const done = await runLeasehold(['forget', 'old-job'], env);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /forgot job "old-job"/);
    assert.equal(await admin.exists(k.stats('old-job')), 0);
    const again = await runLeasehold(['forget', 'old-job'], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no job "old-job"/);
    const usage = await runLeasehold(['forget'], env);
    assert.equal(usage.code, 2);
  });

  it('leasehold forget with no node live: a job written in the last 3 minutes is refused, saying why and until when', async () => {
    // Every node stopped (each took its registrations with it): which jobs the code has is not
    // known, so a job a node wrote a moment ago may be in the code of a node about to start again.
    const none = keyNames('orphan-none');
    const [s] = await admin.time();
    const seenAt = new Date(Number(s) * 1000 - 30_000).toISOString();
    await admin.sadd(none.jobs, 'recent');
    await admin.hset(none.stats('recent'), { scope: 'installation', seenAt, runs: '5' });
    const refused = await runLeasehold(['forget', 'recent'], { REDIS_URL: server.url, LEASEHOLD_PREFIX: 'orphan-none' });
    assert.equal(refused.code, 1);
    const until = new Date(Date.parse(seenAt) + 3 * 60_000).toISOString();
    assert.equal(refused.stderr, `leasehold forget: job "recent" may still be in a node's code: no live node says which jobs it has, and a node wrote the job at ${seenAt}, less than 3 minutes ago; remove it from the code of every node first, or try again after ${until}\n`);
    assert.equal(await admin.exists(none.stats('recent')), 1, 'nothing was removed');
  });
});
