/**
 * Paused ticks and manual runs of installation jobs across nodes (SPEC 4, 6): a paused tick is
 * one skip cluster-wide and is never counted missed; a run now is a claim of its own that
 * never moves the schedule's tick (a gap before it is still counted missed) and, asked through
 * redis-cli, runs once cluster-wide however many nodes hear it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { JobContext, RunStartedEvent } from '../src/index.js';
import { keys as keyNames } from '../src/redis/keys.js';
import { claimScript } from '../src/redis/lease-scripts.js';
import { Scheduler } from '../src/runner/runner.js';
import { createNode, type StatusNode } from '../src/create/index.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

const PREFIX = 'pause-manual';
const k = keyNames(PREFIX);

describe('the claim script\'s pause and manual modes', () => {
  let server: TestRedis;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = server.client();
  });
  after(async () => {
    await server.stop();
  });

  const job = (id: string) => ({ leaseKey: k.lease(id), stateKey: k.state(id), statsKey: k.stats(id), runsKey: k.runs(id), runsCap: 50, leaseMs: 10_000, nowGuardMs: 1e15, countSkip: false });
  const one = async (args: Parameters<typeof claimScript>[1][number]) => {
    const [r] = await claimScript(redis, [args]);
    if (r === undefined || r instanceof Error) throw r ?? new Error('no answer');
    return r;
  };

  it('pause marks a tick once and counts one paused skip; a manual claim leaves the tick alone and runs once per request', async () => {
    const j = job('m1');
    assert.equal((await one({ ...j, tick: 1_000, mode: 'grid', holder: 'a' })).kind, 'claimed');
    await redis.del(k.lease('m1'));
    assert.deepEqual(await one({ ...j, tick: 2_000, mode: 'pause', holder: 'a' }), { kind: 'paused', previousTick: 1_000 });
    assert.equal((await one({ ...j, tick: 2_000, mode: 'pause', holder: 'b' })).kind, 'done', 'a second node finds it marked');
    assert.equal(await redis.hget(k.stats('m1'), 'skippedPaused'), '1');
    const manual = await one({ ...j, tick: 2_500, mode: 'manual', holder: 'a', request: 'r1' });
    assert.equal(manual.kind, 'claimed');
    assert.equal(await redis.hget(k.state('m1'), 'tick'), '2000', 'the schedule\'s tick did not move');
    await redis.del(k.lease('m1'));
    assert.equal((await one({ ...j, tick: 2_600, mode: 'manual', holder: 'b', request: 'r1' })).kind, 'done', 'the same request runs once');
    assert.equal((await one({ ...j, tick: 2_700, mode: 'manual', holder: 'b', request: 'r2' })).kind, 'claimed', 'another request runs');
    await redis.del(k.lease('m1'));
    assert.equal((await one({ ...j, tick: 2_800, mode: 'manual', holder: 'b' })).kind, 'done', 'an anonymous request within a second of the last is the same one');
    const next = await one({ ...j, tick: 5_000, mode: 'grid', holder: 'a' });
    assert.equal(next.kind === 'claimed' && next.previousTick, 2_000, 'the next scheduled claim counts from the schedule\'s own tick');
  });
});

describe('two nodes', () => {
  let server: TestRedis;
  let cli: Redis;
  const nodes: Array<{ core: Scheduler; layer: StatusNode; started: RunStartedEvent[] }> = [];

  before(async () => {
    server = await startRedis();
    cli = server.client();
    const { logger } = memoryLogger();
    for (const id of ['a', 'b']) {
      const layer = createNode({ instanceId: id, logger, shutdownGraceMs: 200, redis: { url: server.url }, prefix: PREFIX, coordinator: 'redis' });
      const core = layer.core;
      core.add({ id: 'every-second', scope: 'installation', cron: '* * * * * *', run: () => undefined });
      core.add({ id: 'rare', scope: 'installation', cron: '0 0 0 1 1 *', run: (ctx: JobContext) => void ctx });
      const started: RunStartedEvent[] = [];
      core.on('runStarted', (e) => started.push(e));
      await layer.start();
      core.start();
      nodes.push({ core, layer, started });
    }
  });
  after(async () => {
    for (const n of nodes) {
      await n.core.stop();
      await n.layer.stop();
    }
    await server.stop();
  });

  const flush = async (): Promise<void> => {
    await Promise.all(nodes.map((n) => n.layer.flush()));
  };
  const stat = async (job: string, field: string): Promise<number> => Number((await cli.hget(k.stats(job), field)) ?? 0);

  it('a pause of a few ticks counts each paused tick once, and no tick as missed after the resume', async () => {
    await until('runs', () => nodes.some((n) => n.started.some((e) => e.jobId === 'every-second')));
    await flush();
    const pausedBefore = await stat('every-second', 'skippedPaused');
    await cli.hset(k.settings, 'every-second.paused', 'true');
    await until('paused on both', () => nodes.every((n) => n.core.job('every-second')?.state === 'paused'), 2_000);
    const pausedAt = Date.now();
    await sleep(3_200);
    await cli.hset(k.settings, 'every-second.paused', 'false');
    await until('resumed on both', () => nodes.every((n) => n.core.job('every-second')?.state === 'ok'), 2_000);
    const pausedFor = Date.now() - pausedAt;
    await sleep(2_500);
    await flush();
    const paused = (await stat('every-second', 'skippedPaused')) - pausedBefore;
    assert.ok(paused >= Math.floor(pausedFor / 1000) - 1 && paused <= Math.ceil(pausedFor / 1000) + 1, `${paused} paused skips for ${pausedFor} ms paused: one per tick, not one per node`);
    assert.equal(await stat('every-second', 'missed'), 0, 'no paused tick is missed');
  });

  it('redis-cli PUBLISH of a run of an installation job runs it once cluster-wide, and a manual run never moves the tick', async () => {
    const tickBefore = await cli.hget(k.state('rare'), 'tick');
    const runs = (): number => nodes.reduce((n, x) => n + x.started.filter((e) => e.jobId === 'rare' && e.manual).length, 0);
    await cli.publish(k.control, JSON.stringify({ type: 'run', jobId: 'rare' }));
    await until('a manual run', () => runs() >= 1, 3_000);
    await sleep(1_000);
    assert.equal(runs(), 1, 'once, though both nodes heard it');
    assert.equal(await cli.hget(k.state('rare'), 'tick'), tickBefore, 'the schedule\'s tick is untouched');
    await flush();
    const recent = (await cli.lrange(k.runs('rare'), 0, 0)).map((t) => JSON.parse(t) as { manual: boolean; fencingToken: number | null });
    assert.equal(recent[0]?.manual, true);
    assert.ok((recent[0]?.fencingToken ?? 0) > 0, 'a manual run gets a fencing token');
  });
});
