/**
 * The status model read straight from Redis (SPEC 5): states and their reasons, counters
 * by name, leases, per-instance rows, live instances, recent runs; four commands a job,
 * in pipelines of 250 jobs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { keys as keyNames, type Keys } from '../src/redis/keys.js';
import { parseLease } from '../src/status/build.js';
import { degradedReasons } from '../src/status/health.js';
import { readCluster, readJob } from '../src/status/read.js';
import { pruneInstanceRows } from '../src/status/prune.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const ZERO = {
  runs: '0', succeeded: '0', failed: '0', timedOut: '0', lockLost: '0', interrupted: '0',
  overruns: '0', skipped: '0', skippedClaimed: '0', skippedPaused: '0', missed: '0', streak: '0',
  lastOutcome: '', lastError: '', lastStartedAt: '', lastDurationMs: '', lastInstance: '', lastSuccessAt: '', nextDueAt: '', invalidCause: '',
};

describe('status model', () => {
  let server: TestRedis;
  let redis: Redis;
  let n = 0;
  let now = 0;
  const iso = (ms: number) => new Date(ms).toISOString();
  const fresh = (): Keys => keyNames(`model-test-${++n}`);
  const job = async (k: Keys, id: string, fields: Record<string, string>) => {
    await redis.sadd(k.jobs, id);
    await redis.hset(k.stats(id), { ...ZERO, scope: 'installation', scheduleKind: 'fixedRate', schedule: '10s', zone: '', intervalMs: '10000', createdAt: iso(now - 3_600_000), seenAt: iso(now), ...fields });
  };

  before(async () => {
    server = await startRedis();
    redis = server.client();
    const [s, us] = await redis.time();
    now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
  });
  after(async () => {
    await server.stop();
  });

  it('computes each state and its reasons from Redis alone', async () => {
    const k = fresh();
    await job(k, 'fine', { runs: '7', succeeded: '7', lastOutcome: 'succeeded', lastSuccessAt: iso(now - 5_000), lastStartedAt: iso(now - 5_100), lastDurationMs: '100', lastInstance: 'n1' });
    await job(k, 'streaky', { runs: '5', failed: '3', succeeded: '2', streak: '3', lastSuccessAt: iso(now - 5_000), lastOutcome: 'failed', lastError: 'boom' });
    await job(k, 'stale', { runs: '1', succeeded: '1', lastSuccessAt: iso(now - 60_000) });
    await job(k, 'young', { createdAt: iso(now - 10_000) });
    await job(k, 'broken', { invalidCause: 'cron: field "hour": 25 is out of range', streak: '9' });
    await job(k, 'held', { streak: '9', lastSuccessAt: iso(now - 1_000), nextDueAt: iso(now - 30_000) });
    await job(k, 'orphan', { seenAt: iso(now - 3_600_000), lastSuccessAt: iso(now - 1_000), nextDueAt: iso(now - 3_590_000) });
    await redis.hset(k.stats('fine'), 'nextDueAt', iso(now + 5_000));
    await redis.hset(k.settings, { 'held.paused': 'TRUE', 'fine.cron': '*/5 * * * * *', 'other.paused': 'true' });
    await redis.set(k.lease('fine'), 'node-1 since 2026-03-01T10:00:00.000Z tick 2026-03-01T10:00:00.000Z token 17', 'PX', 30_000);

    const status = await readCluster(redis, k, { failingStreak: 3 });
    const by = new Map(status.jobs.map((j) => [j.id, j]));
    assert.deepEqual(status.jobs.map((j) => j.id), ['broken', 'fine', 'held', 'orphan', 'stale', 'streaky', 'young']);
    assert.ok(Math.abs(Date.parse(status.generatedAt) - now) < 60_000);

    const fine = by.get('fine');
    assert.equal(fine?.state, 'ok');
    assert.deepEqual(fine?.degradedReasons, []);
    assert.equal(fine?.runs, 7);
    assert.equal(fine?.succeeded, 7);
    assert.equal(fine?.lastOutcome, 'succeeded');
    assert.equal(fine?.lastDurationMs, 100);
    assert.equal(fine?.lastInstance, 'n1');
    assert.equal(fine?.lastError, null);
    assert.deepEqual(fine?.schedule, { kind: 'fixedRate', expression: '10s', zone: null, intervalMs: 10_000 });
    assert.deepEqual(fine?.settings, { cron: '*/5 * * * * *' });
    assert.equal(fine?.lease?.holder, 'node-1');
    assert.equal(fine?.lease?.fencingToken, 17);
    assert.ok((fine?.lease?.ttlMs ?? 0) > 25_000);
    assert.equal(fine?.active, true);

    assert.equal(by.get('streaky')?.state, 'degraded');
    assert.match(by.get('streaky')?.degradedReasons[0] ?? '', /failing streak: the last 3 runs/);
    assert.equal(by.get('stale')?.state, 'degraded');
    assert.match(by.get('stale')?.degradedReasons[0] ?? '', /no successful run for 1\.0m, more than 3 intervals of 10\.0s/);
    assert.equal(by.get('young')?.state, 'ok', 'has not existed for 3 intervals yet');
    assert.equal(by.get('broken')?.state, 'invalidSchedule');
    assert.equal(by.get('broken')?.invalidCause, 'cron: field "hour": 25 is out of range');
    assert.deepEqual(by.get('broken')?.degradedReasons, ['invalid schedule: cron: field "hour": 25 is out of range']);
    assert.equal(by.get('held')?.state, 'paused', 'paused wins over a failing streak');
    assert.deepEqual(by.get('held')?.degradedReasons, []);
    assert.equal(by.get('orphan')?.active, false);
    // No tick is due of a paused job, nor of one that left the code: the last one written has passed.
    assert.equal(fine?.nextDueAt, iso(now + 5_000));
    assert.equal(by.get('held')?.nextDueAt, null);
    assert.equal(by.get('orphan')?.nextDueAt, null);

    // A different threshold from the same data.
    const lenient = await readCluster(redis, k, { failingStreak: 4 });
    assert.equal(lenient.jobs.find((j) => j.id === 'streaky')?.state, 'ok');
  });

  it('instance jobs: one row per instance, live ones marked; next due from live rows', async () => {
    const k = fresh();
    await job(k, 'everywhere', {
      scope: 'instance', nextDueAt: iso(now + 9_000),
    });
    await redis.hset(k.instanceStats('everywhere'), {
      'node.a.runs': '3', 'node.a.succeeded': '3', 'node.a.lastOutcome': 'succeeded', 'node.a.nextDueAt': iso(now + 5_000),
      'node-b.runs': '2', 'node-b.failed': '2', 'node-b.lastOutcome': 'failed', 'node-b.lastError': 'nope', 'node-b.nextDueAt': iso(now + 1_000),
    });
    await redis.hset(k.instance('node.a'), { id: 'node.a', host: 'h1', pid: '10', version: '1.2.3', startedAt: iso(now - 1000), lastSeenAt: iso(now) });
    await redis.pexpire(k.instance('node.a'), 15_000);
    await redis.zadd(k.instances, now, 'node.a', now - 20_000, 'node-b');

    const status = await readCluster(redis, k);
    assert.deepEqual(status.instances, [{ id: 'node.a', host: 'h1', pid: 10, version: '1.2.3', startedAt: iso(now - 1000), lastSeenAt: iso(now), jobs: null }]);
    const j = status.jobs[0];
    assert.equal(j?.lease, null);
    assert.equal(j?.instances.length, 2);
    assert.deepEqual(j?.instances.map((r) => [r.instanceId, r.live, r.runs, r.lastOutcome]), [['node-b', false, 2, 'failed'], ['node.a', true, 3, 'succeeded']]);
    assert.equal(j?.instances[0]?.lastError, 'nope');
    assert.equal(j?.nextDueAt, iso(now + 5_000), 'the earliest next due of a live instance');
  });

  it('an outcome this version does not know (a newer node wrote it) reads as no outcome, and its run is left out', async () => {
    const k = fresh();
    await job(k, 'mixed', { scope: 'instance', runs: '2', succeeded: '1', lastOutcome: 'abandoned' });
    await redis.hset(k.instanceStats('mixed'), { 'n1.runs': '1', 'n1.lastOutcome': 'vanished', 'n2.runs': '1', 'n2.lastOutcome': 'succeeded' });
    const run = (outcome: unknown, instance: string) => JSON.stringify({ outcome, instance, scheduledAt: iso(now), startedAt: iso(now), durationMs: 5, error: null, fencingToken: null, manual: false, attempt: 1 });
    await redis.rpush(k.runs('mixed'), run('abandoned', 'n1'), run('succeeded', 'n2'), run(7, 'n3'), run('toString', 'n4'));

    const listed = (await readCluster(redis, k)).jobs[0];
    assert.equal(listed?.lastOutcome, null);
    assert.deepEqual(listed?.instances.map((r) => [r.instanceId, r.lastOutcome]), [['n1', null], ['n2', 'succeeded']]);
    const detail = await readJob(redis, k, 'mixed');
    assert.equal(detail?.lastOutcome, null);
    assert.equal(detail?.runs, 2, 'the counters are read as they are');
    assert.deepEqual(detail?.recentRuns.map((r) => [r.instance, r.outcome]), [['n2', 'succeeded']]);
  });

  it('forgets the rows of instances gone for long, keeps live and recent ones', async () => {
    const k = fresh();
    const old = iso(now - 2 * 3_600_000);
    await redis.hset(k.instanceStats('per-node'), {
      'live.runs': '1', 'live.seenAt': old,
      'gone.runs': '2', 'gone.seenAt': old,
      'recent.runs': '3', 'recent.seenAt': iso(now - 60_000),
    });
    await redis.hset(k.instance('live'), 'id', 'live');
    await redis.zadd(k.instances, now, 'live', now - 3_600_000, 'gone');
    assert.equal(await pruneInstanceRows(redis, k, ['per-node', 'no-such-job'], now), 2);
    assert.deepEqual((await redis.hkeys(k.instanceStats('per-node'))).sort(), ['live.runs', 'live.seenAt', 'recent.runs', 'recent.seenAt']);
  });

  it('one job with its recent runs; unknown ids and garbage are harmless', async () => {
    const k = fresh();
    await job(k, 'solo', { runs: '2' });
    await redis.lpush(k.runs('solo'), JSON.stringify({ outcome: 'succeeded', instance: 'a' }), 'not json', JSON.stringify({ outcome: 'failed', instance: 'b' }));
    const detail = await readJob(redis, k, 'solo');
    assert.equal(detail?.runs, 2);
    assert.deepEqual(detail?.recentRuns.map((r) => r.outcome), ['failed', 'succeeded']);
    assert.equal(await readJob(redis, k, 'nobody'), undefined);
    // An operator's mistakes: ids that are not job ids, a key of the wrong type.
    await redis.sadd(k.jobs, 'bad id', 'bad{tag}');
    await redis.sadd(k.jobs, 'wrongtype');
    await redis.set(k.stats('wrongtype'), 'x');
    const status = await readCluster(redis, k);
    assert.deepEqual(status.jobs.map((j) => j.id), ['solo', 'wrongtype']);
    assert.equal(status.jobs[1]?.runs, 0);
  });

  it('reads 1,000 jobs with three commands each and a lease\'s value only where one exists, chunk after chunk, every job once and in order', async () => {
    const k = fresh();
    const p = redis.pipeline();
    for (let i = 0; i < 1_000; i++) {
      const id = `bulk-${String(i).padStart(4, '0')}`;
      p.sadd(k.jobs, id);
      p.hset(k.stats(id), { ...ZERO, scope: i % 2 ? 'instance' : 'installation', scheduleKind: 'cron', schedule: '0 * * * * *', zone: 'UTC', intervalMs: '60000', runs: String(i), createdAt: iso(now), seenAt: iso(now) });
      if (i % 2) p.hset(k.instanceStats(id), { 'n1.runs': '1', 'n2.runs': '2' });
      // Ten installation jobs running, spread over the chunks.
      if (i % 100 === 0) p.set(k.lease(id), `node-${i} since 2026-03-01T10:00:00.000Z tick 2026-03-01T10:00:00.000Z token ${i + 1}`, 'PX', 30_000);
    }
    await p.exec();
    const processed = async (): Promise<number> => Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1]);
    const before = await processed();
    const s = await readCluster(redis, k);
    const after = await processed();
    assert.equal(s.jobs.length, 1_000);
    assert.equal(after - before - 1, 5 + 3 * 1_000 + 10, 'three commands per job and a GET per lease, nothing per job besides');
    assert.deepEqual(s.jobs.map((j) => j.runs), Array.from({ length: 1_000 }, (_, i) => i), 'each job built from its own replies, across the chunks');
    assert.deepEqual(s.jobs.filter((j) => j.instances.length > 0).length, 500, 'the instance jobs keep their rows in every chunk');
    const running = s.jobs.filter((j) => j.lease !== null);
    assert.deepEqual(running.map((j) => [j.id, j.lease?.holder, j.lease?.fencingToken]), Array.from({ length: 10 }, (_, n) => [`bulk-${String(n * 100).padStart(4, '0')}`, `node-${n * 100}`, n * 100 + 1]));
    assert.ok(running.every((j) => (j.lease?.ttlMs ?? 0) > 25_000), 'each lease with its time to live');
    // How fast it is, is the benchmark's to say (S4: GET /manage/jobs with 1,000 jobs).
  });

  it('parses lease values, and judges degradation with slack for the last run', () => {
    assert.deepEqual(parseLease('a b since 2026-01-01T00:00:00.000Z tick 2026-01-01T00:00:00.000Z token 3', 1000), {
      holder: 'a b', since: '2026-01-01T00:00:00.000Z', fencingToken: 3, ttlMs: 1000, value: 'a b since 2026-01-01T00:00:00.000Z tick 2026-01-01T00:00:00.000Z token 3',
    });
    assert.equal(parseLease('something else', -1).holder, 'something else');
    const base = { intervalMs: '1000', createdAt: iso(0), lastSuccessAt: iso(0), lastDurationMs: '60000' };
    const ctx = { live: new Set<string>(), failingStreak: 3 };
    assert.deepEqual(degradedReasons(base, { ...ctx, nowMs: 3_000 + 60_000 + 1_000 }), [], 'a long run is not a missing success');
    assert.equal(degradedReasons(base, { ...ctx, nowMs: 3_000 + 60_000 + 3_000 }).length, 1);
    assert.deepEqual(degradedReasons({ ...base, resumedAt: iso(60_000) }, { ...ctx, nowMs: 66_000 }), [], 'counted from the resume');
  });
});
