/**
 * Reads of the whole status by a node that read it before: only the stats that moved since
 * are read again, and every change still shows at the next read (a run recorded, a skip or a
 * lost run counted by a claim, gone nodes' rows pruned, a lease, a pause, a node gone, a job
 * forgotten and registered again); a hand edit that raises no version within ten reads.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { keys as keyNames, type Keys } from '../src/redis/keys.js';
import type { RecordBatch } from '../src/redis/record.js';
import { claimScript } from '../src/redis/lease-scripts.js';
import { pruneScript, recordScript } from '../src/redis/stats-scripts.js';
import { KnownJobs } from '../src/status/known.js';
import { readCluster } from '../src/status/read.js';
import type { ClusterStatus, JobStatus } from '../src/status/model.js';
import { commandsRun, startRedis, type TestRedis } from './helpers/redis.js';

describe('status reads of a node that read before', () => {
  let server: TestRedis;
  let redis: Redis;
  let n = 0;
  let seq = 0;
  const iso = (ms: number) => new Date(ms).toISOString();

  before(async () => {
    server = await startRedis();
    redis = server.client();
  });
  after(async () => {
    await server.stop();
  });

  /** An installation of `count` jobs registered through record.lua, and a node's reader of it. */
  const installation = async (count: number, scope: 'installation' | 'instance' = 'installation') => {
    const k: Keys = keyNames(`known-test-${++n}`);
    const ids = Array.from({ length: count }, (_, i) => `job-${i}`);
    const record = async (id: string, batch: RecordBatch, writer = 'node-a#1') => {
      const [r] = await recordScript(redis, [{ statsKey: k.stats(id), instancesKey: k.instanceStats(id), runsKey: k.runs(id), stateKey: k.state(id), writersKey: k.writers(id), leaseKey: k.lease(id), writer, seq: ++seq, batch }], { runsCap: 5, keepMs: 60_000 });
      if (!r || r instanceof Error) throw r ?? new Error('no reply');
    };
    const define = { scope, scheduleKind: 'fixedRate', schedule: '10s', zone: '', intervalMs: '10000' };
    const register = async (id: string) => {
      await redis.sadd(k.jobs, id);
      await record(id, { init: true, createdAt: iso(Date.now()), define, set: { seenAt: iso(Date.now()) }, ...(scope === 'instance' ? { inst: { id: 'node-a', set: { seenAt: iso(Date.now()) } } } : {}) });
    };
    for (const id of ids) await register(id);
    // As a node reads: with the jobs its earlier reads found.
    const known = new KnownJobs();
    const read = () => readCluster(redis, k, { known });
    return { k, ids, define, record, register, read };
  };
  const byId = (status: ClusterStatus, id: string): JobStatus => {
    const job = status.jobs.find((j) => j.id === id);
    assert.ok(job, `${id} is in the status`);
    return job;
  };
  const succeeded = (startedAt: number): RecordBatch => ({
    incr: { runs: 1, succeeded: 1 },
    last: { lastOutcome: 'succeeded', lastError: '', lastStartedAt: iso(startedAt), lastDurationMs: '5', lastInstance: 'node-a' },
    successAt: iso(startedAt + 5),
  });

  it('reads again only the stats of the jobs that ran, and shows their runs at the next read', async () => {
    const { ids, record, read } = await installation(600);
    const first = await read();
    assert.equal(first.jobs.length, 600);
    assert.equal(byId(first, 'job-7').runs, 0);
    await record('job-7', succeeded(Date.now()));
    await record('job-420', succeeded(Date.now()));
    await redis.config('RESETSTAT');
    const second = await read();
    const run = await commandsRun(redis);
    assert.equal(byId(second, 'job-7').runs, 1);
    assert.equal(byId(second, 'job-7').lastOutcome, 'succeeded');
    assert.equal(byId(second, 'job-420').succeeded, 1);
    // The two that ran, about a tenth of the jobs whose turn it is to be read whole, and the
    // settings and nodes hashes; the others have their version read.
    const whole = (run['hgetall'] ?? 0) - 2;
    const versions = run['hmget'] ?? 0;
    assert.ok(versions >= 510 && versions <= 570, `HMGET of ${versions} jobs' versions: all but about a tenth`);
    // Those whose version was read and had moved are read again whole: one or both of the two.
    assert.ok(versions + whole >= 601 && versions + whole <= 602, `HGETALL of ${whole} jobs' stats besides ${versions} versions`);
    // An unchanged job whose status did not move is the same as before.
    const unchanged = ids.find((id, i) => i % 10 !== 1 && id !== 'job-7' && id !== 'job-420') ?? '';
    assert.deepEqual(byId(second, unchanged), byId(first, unchanged));
  });

  it('reads no stats again for a minute refresh that changes seenAt alone, and shows every job\'s new lastRegisteredAt at the next read', async () => {
    const { k, ids, define, record, read } = await installation(600);
    const first = await read();
    const version = await redis.hget(k.stats('job-5'), 'version');
    // Each job's minute refresh from the node that refreshes it, as the stats writer sends it.
    const later = iso(Date.now() + 60_000);
    for (const id of ids) await record(id, { init: true, createdAt: later, define, set: { invalidCause: '', seenAt: later } });
    assert.equal(await redis.hget(k.stats('job-5'), 'version'), version, 'the refresh leaves the version');
    await redis.config('RESETSTAT');
    const second = await read();
    const run = await commandsRun(redis);
    for (const id of ids) assert.equal(byId(second, id).lastRegisteredAt, later, id);
    // Only the jobs whose turn it is (about a tenth) are read whole.
    const whole = (run['hgetall'] ?? 0) - 2;
    assert.ok(whole < 120, `HGETALL of ${whole} jobs' stats`);
    // The rest of a job's status is as it was.
    assert.deepEqual({ ...byId(second, 'job-5'), lastRegisteredAt: null }, { ...byId(first, 'job-5'), lastRegisteredAt: null });
  });

  it('gives a stats hash with no version (an older release wrote it) one at its next refresh, and a refresh that changes a field or makes a row raises it', async () => {
    const { k, define, record } = await installation(3);
    const refresh = (id: string, set: Record<string, string> = {}, extra: Partial<RecordBatch> = {}) =>
      record(id, { init: true, createdAt: iso(Date.now()), define, set: { invalidCause: '', seenAt: iso(Date.now()), ...set }, ...extra });
    const version = (id: string) => redis.hget(k.stats(id), 'version');
    // Written by a release that kept no version: read whole at every read until it has one.
    await redis.hdel(k.stats('job-0'), 'version');
    await refresh('job-0');
    assert.equal(await version('job-0'), '1', 'the refresh gave it a version');
    const before = await version('job-1');
    await refresh('job-1', { invalidCause: 'bad zone' });
    assert.equal(Number(await version('job-1')), Number(before) + 1, 'a new invalid cause raises it');
    // A node's row made by its refresh alone (pruned while the node was cut off): a row the status shows.
    const before2 = await version('job-2');
    await record('job-2', { inst: { id: 'node-b', set: { seenAt: iso(Date.now()) } } });
    assert.equal(Number(await version('job-2')), Number(before2) + 1, 'a new row raises it');
  });

  it('shows what a claim counts: a claimed skip, and a run found lost', async () => {
    const { k, record, read } = await installation(3);
    await read();
    const claim = (id: string, tick: number, holder: string, countSkip: boolean) => claimScript(redis, [{ leaseKey: k.lease(id), stateKey: k.state(id), statsKey: k.stats(id), runsKey: k.runs(id), tick, leaseMs: 200, holder, mode: 'grid', nowGuardMs: 1e15, countSkip, runsCap: 5 }]);
    const tick = Date.now() - 1000;
    await claim('job-1', tick, 'node-a', false);
    await claim('job-1', tick, 'node-b', true); // the tick is taken: node-b's skip is counted
    const afterSkip = await read();
    assert.equal(byId(afterSkip, 'job-1').skippedClaimed, 1);
    assert.equal(byId(afterSkip, 'job-1').lease?.holder, 'node-a', 'the lease is read at every read');
    // node-a never records its run; its lease expires and the next claim records the run lost.
    await record('job-2', succeeded(Date.now()));
    await new Promise((r) => setTimeout(r, 300));
    const [lost] = await claim('job-1', tick + 10_000, 'node-b', false);
    assert.ok(lost && !(lost instanceof Error) && lost.kind === 'claimed' && lost.lost, 'the claim found the run lost');
    const afterLost = await read();
    assert.equal(byId(afterLost, 'job-1').lost, 1);
    assert.equal(byId(afterLost, 'job-1').lastOutcome, 'lost');
    assert.equal(byId(afterLost, 'job-1').lease?.holder, 'node-b');
  });

  it('shows a pause, a node gone, and the rows a prune removed', async () => {
    const { k, record, read } = await installation(2, 'instance');
    await redis.zadd(k.instances, Date.now(), 'node-a');
    await redis.hset(k.instance('node-a'), { host: 'h', pid: '1', version: 'x', startedAt: iso(Date.now()), lastSeenAt: iso(Date.now()), jobs: '2' });
    await record('job-0', { ...succeeded(Date.now()), inst: { id: 'node-a', incr: { runs: 1, succeeded: 1 } } });
    await record('job-0', { inst: { id: 'node-old', incr: { runs: 1 }, set: { seenAt: iso(Date.now() - 7_200_000) } } }, 'node-old#1');
    const first = await read();
    assert.deepEqual(byId(first, 'job-0').instances.map((r) => [r.instanceId, r.live]), [['node-a', true], ['node-old', false]]);
    await redis.hset(k.settings, 'job-1.paused', 'true');
    await redis.del(k.instance('node-a'));
    const second = await read();
    assert.equal(byId(second, 'job-1').state, 'paused');
    assert.deepEqual(byId(second, 'job-0').instances.map((r) => [r.instanceId, r.live]), [['node-a', false], ['node-old', false]]);
    assert.equal(await pruneScript(redis, { instancesKey: k.instanceStats('job-0'), statsKey: k.stats('job-0'), cutoff: iso(Date.now() - 3_600_000), instanceIds: ['node-old'] }), 2);
    const third = await read();
    assert.deepEqual(byId(third, 'job-0').instances.map((r) => r.instanceId), ['node-a']);
  });

  it('shows the rows of a job that became an instance job, and the lease of one that became an installation job', async () => {
    const { k, record, read } = await installation(20);
    await redis.zadd(k.instances, Date.now(), 'node-a');
    await redis.hset(k.instance('node-a'), { host: 'h', lastSeenAt: iso(Date.now()), jobs: '20' });
    await read();
    // The code makes job-3 an instance job: its node writes the scope and its row in one batch.
    await record('job-3', { define: { scope: 'instance' }, inst: { id: 'node-a', incr: { runs: 1 }, set: { nextDueAt: iso(Date.now() + 10_000) } } });
    for (let i = 0; i < 3; i++) {
      const job = byId(await read(), 'job-3');
      assert.deepEqual(job.instances.map((r) => [r.instanceId, r.runs]), [['node-a', 1]], `read ${i + 1} after the change`);
    }
    // And back: an installation job again, whose run holds its lease.
    await record('job-3', { define: { scope: 'installation' } });
    await redis.set(k.lease('job-3'), `node-a since ${iso(Date.now())} tick ${iso(Date.now())} token 1`, 'PX', 60_000);
    for (let i = 0; i < 3; i++) assert.equal(byId(await read(), 'job-3').lease?.holder, 'node-a', `read ${i + 1} after the change back`);
  });

  it('reads the jobs it knows in one script call per chunk of 250, which carries back only the jobs that moved or hold a lease', async () => {
    const { k, ids, record, read } = await installation(1_000);
    await read();
    await record('job-7', succeeded(Date.now()));
    for (const id of ['job-100', 'job-600']) await redis.set(k.lease(id), `node-b since ${iso(Date.now())} tick ${iso(Date.now())} token 9`, 'PX', 30_000);
    await redis.config('RESETSTAT');
    const second = await read();
    const run = await commandsRun(redis);
    const scripts = [...(await redis.info('commandstats')).matchAll(/cmdstat_eval(?:sha)?:calls=(\d+),/g)].reduce((n, m) => n + Number(m[1]), 0);
    assert.equal(scripts, 4, 'one call per chunk of 250 jobs');
    // Inside it, a GET of the two leases only; besides it, the tenth read whole in their turn and job-7 again.
    assert.equal(run['get'], 2);
    assert.ok((run['hgetall'] ?? 0) < 2 + 150, `HGETALL of ${run['hgetall']} stats hashes`);
    assert.equal(byId(second, 'job-7').runs, 1);
    for (const id of ['job-100', 'job-600']) assert.equal(byId(second, id).lease?.holder, 'node-b', id);
    assert.equal(second.jobs.filter((j) => j.lease !== null).length, 2);
    assert.equal(second.jobs.length, ids.length);
  });

  it('keeps each unchanged job\'s status as the same object through its turns to be read whole: a read makes no new status for a job that did not change', async () => {
    const { ids, record, read } = await installation(50);
    const first = await read();
    let last = first;
    // Ten reads: every job has its turn to be read whole at least once.
    for (let i = 0; i < 10; i++) last = await read();
    for (const id of ids) assert.equal(byId(last, id), byId(first, id), `${id} is the object the first read made`);
    await record('job-7', succeeded(Date.now()));
    const after = await read();
    assert.notEqual(byId(after, 'job-7'), byId(first, 'job-7'));
    assert.equal(byId(after, 'job-7').runs, 1);
  });

  it('shows a job forgotten and registered again with its fresh counters', async () => {
    const { k, record, register, read } = await installation(2);
    await record('job-0', succeeded(Date.now()));
    assert.equal(byId(await read(), 'job-0').runs, 1);
    await redis.del(k.stats('job-0'), k.instanceStats('job-0'), k.runs('job-0'), k.writers('job-0'));
    await new Promise((r) => setTimeout(r, 5)); // another createdAt
    await register('job-0');
    assert.equal(byId(await read(), 'job-0').runs, 0);
  });

  it('shows a hand edit that raises no version within ten reads', async () => {
    const { k, read } = await installation(1);
    await read();
    await redis.hset(k.stats('job-0'), 'runs', '99');
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) seen.push(byId(await read(), 'job-0').runs);
    assert.ok(seen.includes(99), `runs read over ten reads: ${seen.join(', ')}`);
  });
});
