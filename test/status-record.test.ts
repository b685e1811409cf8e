/**
 * record.lua through its wrapper (SPEC 5): counters are added atomically, every field exists
 * from the first write, last-run fields follow the newest run, the recent-runs list is
 * capped, and a batch retried after a lost reply counts once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { isLeaseholdError } from '../src/errors.js';
import { keys } from '../src/redis/keys.js';
import { claimScript } from '../src/redis/lease-scripts.js';
import { pruneScript, recordScript } from '../src/redis/stats-scripts.js';
import type { RecordBatch } from '../src/redis/record.js';
import { commandsRun, startRedis, type TestRedis } from './helpers/redis.js';

describe('record.lua', () => {
  let server: TestRedis;
  let redis: Redis;
  let n = 0;
  const fresh = () => {
    n += 1;
    const k = keys(`record-test-${n}`);
    const job = 'job-1';
    return {
      k,
      job,
      send: async (writer: string, seq: number, batch: RecordBatch, runsCap = 5) => {
        const [r] = await recordScript(redis, [{
          statsKey: k.stats(job),
          instancesKey: k.instanceStats(job),
          runsKey: k.runs(job),
          stateKey: k.state(job),
          writersKey: k.writers(job), leaseKey: k.lease(job),
          writer,
          seq,
          batch,
        }], { runsCap, keepMs: 60_000 });
        if (r === undefined || r instanceof Error) throw r ?? new Error('no result');
        return r.applied;
      },
    };
  };
  before(async () => {
    server = await startRedis();
    redis = server.client();
  });
  after(async () => {
    await server.stop();
  });

  it('creates every field with zeros on init, without overwriting existing counts', async () => {
    const { k, job, send } = fresh();
    assert.equal(await send('w', 1, { init: true, createdAt: '2026-01-01T00:00:00.000Z', define: { scope: 'instance' }, inst: { id: 'node-a' } }), true);
    const stats = await redis.hgetall(k.stats(job));
    for (const f of ['runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'overruns', 'skipped', 'missed', 'streak']) {
      assert.equal(stats[f], '0', f);
    }
    for (const f of ['lastOutcome', 'lastError', 'lastStartedAt', 'lastDurationMs', 'lastInstance', 'nextDueAt', 'lastSuccessAt']) {
      assert.equal(stats[f], '', f);
    }
    assert.equal(stats['scope'], 'instance');
    assert.equal(stats['createdAt'], '2026-01-01T00:00:00.000Z');
    const inst = await redis.hgetall(k.instanceStats(job));
    assert.equal(inst['node-a.runs'], '0');
    assert.equal(inst['node-a.lastOutcome'], '');
    await send('w', 2, { incr: { runs: 2, succeeded: 2 } });
    await send('w', 3, { init: true, createdAt: '2027-01-01T00:00:00.000Z' });
    const again = await redis.hgetall(k.stats(job));
    assert.equal(again['runs'], '2');
    assert.equal(again['createdAt'], '2026-01-01T00:00:00.000Z');
  });

  it("repeats no field creation on a hash that has its fields: each node's init every minute reads one field of the stats hash, in the read that checks its type", async () => {
    const { k, job, send } = fresh();
    // A run written before any init (a node that found the hash deleted) leaves no createdAt: init still creates the rest.
    await send('w', 1, { incr: { runs: 1, succeeded: 1 } });
    await send('w', 2, { init: true, createdAt: '2026-01-01T00:00:00.000Z' });
    const stats = await redis.hgetall(k.stats(job));
    assert.equal(stats['runs'], '1');
    assert.equal(stats['failed'], '0');
    assert.equal(stats['lastError'], '');
    await redis.config('RESETSTAT');
    for (let seq = 3; seq < 13; seq++) await send('w', seq, { init: true, createdAt: '2027-01-01T00:00:00.000Z' });
    const { pexpire = 0, ...run } = await commandsRun(redis);
    assert.equal(run['hsetnx'], undefined, 'a hash with its fields got HSETNX again');
    // Per init: TIME, the HMGET of the writers hash and the stats hash's (its createdAt: the read
    // that checks its type too), the writers' HSET (and a PEXPIRE when its renewal is due).
    assert.deepEqual(run, { time: 10, hmget: 20, hset: 10 }, `${JSON.stringify(run)}, pexpire ${pexpire}`);
    // Deleted, it is created again by the next init.
    await redis.del(k.stats(job));
    await send('w', 13, { init: true, createdAt: '2028-01-01T00:00:00.000Z' });
    const again = await redis.hgetall(k.stats(job));
    assert.equal(again['runs'], '0');
    assert.equal(again['createdAt'], '2028-01-01T00:00:00.000Z');
  });

  it("writes a run's record in nine commands however many fields it changes, and renews the writers' hash's expiry once per hundredth of its keep time", async () => {
    const { k, job, send } = fresh();
    await send('w', 1, { init: true, createdAt: '2026-01-01T00:00:00.000Z', inst: { id: 'node-a' } });
    await redis.config('RESETSTAT');
    const startedAt = '2026-01-01T00:01:00.000Z';
    assert.equal(await send('w', 2, {
      incr: { runs: 1, failed: 1 }, fails: 1,
      last: { lastOutcome: 'failed', lastError: 'boom', lastStartedAt: startedAt, lastDurationMs: '12', lastInstance: 'node-a' },
      set: { nextDueAt: '2026-01-01T00:02:00.000Z' },
      inst: { id: 'node-a', incr: { runs: 1, failed: 1 }, last: { lastOutcome: 'failed', lastStartedAt: startedAt } },
      runs: ['{"outcome":"failed"}'],
    }), true);
    const calls = Object.values(await commandsRun(redis)).reduce((sum, n) => sum + n, 0);
    // HMGET and HSET of the writers hash, TIME, LPUSH, LTRIM, a HMGET and a HSET each for the job's two hashes:
    // every key is checked before anything is written, each hash by its HMGET, the runs list by the
    // LPUSH that comes before any other write.
    assert.equal(calls, 9);
    const stats = await redis.hgetall(k.stats(job));
    assert.deepEqual([stats['runs'], stats['failed'], stats['streak'], stats['lastError'], stats['lastStartedAt'], stats['nextDueAt']], ['1', '1', '1', 'boom', startedAt, '2026-01-01T00:02:00.000Z']);
    const inst = await redis.hgetall(k.instanceStats(job));
    assert.deepEqual([inst['node-a.runs'], inst['node-a.failed'], inst['node-a.lastOutcome']], ['1', '1', 'failed']);
    // An installation job's run, recorded without an instance row: seven.
    await redis.config('RESETSTAT');
    assert.equal(await send('w', 3, {
      incr: { runs: 1, succeeded: 1 }, successAt: startedAt, last: { lastOutcome: 'succeeded', lastStartedAt: startedAt },
      set: { nextDueAt: '2026-01-01T00:03:00.000Z' }, runs: ['{"outcome":"succeeded"}'],
    }), true);
    const { pexpire = 0, ...installation } = await commandsRun(redis);
    assert.equal(Object.values(installation).reduce((sum, n) => sum + n, 0), 7, `${JSON.stringify(installation)}, pexpire ${pexpire}`);
    // 600 ms (keepMs 60 s) after the writer's last renewal, its next batch renews the expiry.
    await redis.pexpire(k.writers(job), 30_000);
    await new Promise((resolve) => setTimeout(resolve, 650));
    assert.equal(await send('w', 4, { incr: { runs: 1 } }), true);
    assert.ok((await redis.pttl(k.writers(job))) > 59_000);
  });

  it('refuses a batch whose counter holds no integer, naming the field, and writes none of it', async () => {
    const { k, job, send } = fresh();
    await send('w', 1, { init: true, createdAt: '2026-01-01T00:00:00.000Z' });
    await redis.hset(k.stats(job), 'failed', 'many');
    await assert.rejects(send('w', 2, { incr: { runs: 1, failed: 1 }, set: { nextDueAt: 'x' }, runs: ['{}'] }), /not an integer: failed/);
    const stats = await redis.hgetall(k.stats(job));
    assert.deepEqual([stats['runs'], stats['nextDueAt']], ['0', '']);
    assert.equal(await redis.llen(k.runs(job)), 0);
  });

  it('checks every key it writes before writing anything: a key of the wrong type answers corruptState naming it, and nothing moves', async () => {
    const corrupt: Record<string, (key: string) => Promise<unknown>> = {
      stats: (key) => redis.set(key, 'garbage'),
      instances: (key) => redis.set(key, 'garbage'),
      runs: (key) => redis.hset(key, 'x', '1'),
      state: (key) => redis.set(key, 'garbage'),
      writers: (key) => redis.set(key, 'garbage'),
    };
    const startedAt = '2026-01-01T00:01:00.000Z';
    const run = {
      incr: { runs: 1, failed: 1 }, fails: 1,
      last: { lastOutcome: 'failed', lastError: 'boom', lastStartedAt: startedAt, lastDurationMs: '1', lastInstance: 'node-a' },
      set: { seenAt: startedAt },
      inst: { id: 'node-a', incr: { runs: 1, failed: 1 }, last: { lastOutcome: 'failed' } },
      runs: ['{"outcome":"failed"}'],
    };
    // Each kind of batch, with the keys it writes: a node's first (its init), a run's, one with
    // no field to read (only set), and a run whose claim got no answer (it writes the state too).
    const batches: Array<[string, RecordBatch, string[]]> = [
      ['init and a run', { init: true, createdAt: '2026-01-01T00:00:00.000Z', define: { scope: 'instance' }, ...run }, ['stats', 'instances', 'runs', 'writers']],
      ['a run', run, ['stats', 'instances', 'runs', 'writers']],
      ['set only', { set: { nextDueAt: startedAt }, inst: { id: 'node-a', set: { seenAt: startedAt } } }, ['stats', 'instances', 'writers']],
      ['a lost claim', { leaseLost: [{ tick: 1_000, holder: 'node-a', ...run }] }, ['stats', 'runs', 'writers']],
    ];
    for (const [kind, batch, writes] of batches) {
      for (const which of writes) {
        const { k, job, send } = fresh();
        // The job's history before the damage: a first writer's batch.
        assert.equal(await send('old', 1, { incr: { runs: 1, succeeded: 1 }, inst: { id: 'node-a', incr: { runs: 1 } }, runs: ['{"outcome":"succeeded"}'] }), true);
        await redis.hset(k.state(job), 'fence', '1');
        const all = { stats: k.stats(job), instances: k.instanceStats(job), runs: k.runs(job), state: k.state(job), writers: k.writers(job) };
        const key = all[which as keyof typeof all];
        await redis.del(key);
        await corrupt[which]?.(key);
        const before = await Promise.all(Object.values(all).map((x) => redis.dump(x)));
        // A writer's first batch (it forgets writers long gone) and a later one.
        for (const [writer, seq] of [['new', 1], ['new', 1], ['old', 2]] as const) {
          await assert.rejects(send(writer, seq, batch), (err) => isLeaseholdError(err, 'corruptState') && err.message.includes(key) && /DEL/.test(err.message), `${kind}: ${which}`);
        }
        const after = await Promise.all(Object.values(all).map((x) => redis.dump(x)));
        assert.deepEqual(after, before, `${kind}: ${which}: no key changed`);
      }
    }
  });

  it('counts a run that may have been found lost when the claim state is damaged, and leaves that key alone: no claim can record it lost meanwhile', async () => {
    const { k, job, send } = fresh();
    await redis.set(k.state(job), 'garbage');
    const run = { incr: { runs: 1, succeeded: 1 }, last: { lastOutcome: 'succeeded', lastStartedAt: '2026-01-01T00:01:00.000Z' }, runs: ['{"outcome":"succeeded"}'] };
    assert.equal(await send('w#1', 1, { leaseLost: [{ token: 3, ...run }, { tick: 1_000, holder: 'node-a', ...run }] }), true);
    assert.equal(await redis.hget(k.stats(job), 'runs'), '2');
    assert.equal(await redis.get(k.state(job)), 'garbage');
  });

  it('counts a tick whose claims got no answer once, however many nodes tried it, and not when it was claimed or counted missed already; the next claim counts it not missed', async () => {
    const { k, job, send } = fresh();
    const failedClaim = (tick: number, holder: string) => ({ tick, holder, incr: { runs: 1, failed: 1 }, fails: 1, last: { lastOutcome: 'failed', lastStartedAt: new Date(tick).toISOString() }, runs: [`{"outcome":"failed","scheduledAt":${tick}}`] });
    await redis.hset(k.state(job), 'tick', '1000');
    // Redis was away for ticks 2000, 3000 and 4000; three nodes, each tick tried by its first
    // claimer and its backup, each node recording the ticks it tried.
    assert.equal(await send('a#1', 1, { leaseLost: [failedClaim(2_000, 'a'), failedClaim(4_000, 'a')] }), true);
    assert.equal(await send('b#1', 1, { leaseLost: [failedClaim(2_000, 'b'), failedClaim(3_000, 'b')] }), true);
    assert.equal(await send('c#1', 1, { leaseLost: [failedClaim(3_000, 'c'), failedClaim(4_000, 'c')] }), true);
    assert.deepEqual(await redis.hmget(k.stats(job), 'runs', 'failed', 'streak'), ['3', '3', '3'], 'three ticks, three failed runs');
    assert.equal(await redis.llen(k.runs(job)), 3);
    assert.equal(await redis.hget(k.state(job), 'tick'), '1000', 'no tick claimed');
    // The claim of the next tick: the three are not missed, and are done with.
    const claimKeys = { leaseKey: k.lease(job), stateKey: k.state(job), statsKey: k.stats(job), runsKey: k.runs(job), countSkip: false, runsCap: 5, leaseMs: 1_000, mode: 'grid' as const, nowGuardMs: 1e15 };
    const [won] = await claimScript(redis, [{ ...claimKeys, tick: 5_000, holder: 'a' }]);
    assert.ok(won !== undefined && !(won instanceof Error) && won.kind === 'claimed', String(won));
    assert.equal(won.previousTick, 1_000);
    assert.deepEqual(won.failedTicks, [2_000, 4_000, 3_000], 'the three ticks, in the order their records counted them');
    assert.equal(await redis.hget(k.state(job), 'failed'), '');
    // A tick claimed since (5000 ran), or counted missed by that claim (a record that comes late): not a run.
    assert.equal(await send('b#1', 2, { leaseLost: [failedClaim(4_500, 'b'), failedClaim(5_000, 'b')] }), true);
    assert.deepEqual(await redis.hmget(k.stats(job), 'runs', 'failed'), ['3', '3']);
    // An operator's run now is no tick of the schedule: its failed claim counts.
    assert.equal(await send('a#1', 2, { leaseLost: [{ ...failedClaim(4_600, 'a'), manual: true }] }), true);
    assert.deepEqual(await redis.hmget(k.stats(job), 'runs', 'failed'), ['4', '4']);
  });

  it('counts a tick whose claims reached Redis stale once: failed when a record comes before the next claim, else missed by that claim and not by the records', async () => {
    const failedClaim = (tick: number, holder: string) => ({ tick, holder, incr: { runs: 1, failed: 1 }, fails: 1, last: { lastOutcome: 'failed', lastStartedAt: new Date(tick).toISOString() }, runs: ['{"outcome":"failed"}'] });
    for (const recordFirst of [true, false]) {
      const { k, job, send } = fresh();
      const claimKeys = { leaseKey: k.lease(job), stateKey: k.state(job), statsKey: k.stats(job), runsKey: k.runs(job), countSkip: false, runsCap: 5, leaseMs: 1_000, mode: 'grid' as const, nowGuardMs: 1e15 };
      await redis.hset(k.state(job), 'tick', '1000');
      // Redis wakes from a stall with the held-back claims of tick 2000 from a and its backup b.
      for (const holder of ['a', 'b']) {
        const [r] = await claimScript(redis, [{ ...claimKeys, tick: 2_000, holder }], 1);
        assert.ok(r instanceof Error && /stopped waiting/.test(r.message), String(r));
      }
      assert.equal(await redis.hget(k.state(job), 'tick'), '1000', 'a stale claim changes nothing');
      const records = async () => {
        assert.equal(await send('b#1', 1, { leaseLost: [failedClaim(2_000, 'b')] }), true);
        assert.equal(await send('a#1', 1, { leaseLost: [failedClaim(2_000, 'a')] }), true);
      };
      if (recordFirst) await records();
      const [won] = await claimScript(redis, [{ ...claimKeys, tick: 3_000, holder: 'a' }]);
      assert.ok(won !== undefined && !(won instanceof Error) && won.kind === 'claimed' && won.previousTick === 1_000);
      if (!recordFirst) await records();
      const failed = Number(await redis.hget(k.stats(job), 'failed'));
      // The claimant counts missed the grid ticks between 1000 and 3000 less those counted failed.
      const missed = 1 - (won.failedTicks?.length ?? 0);
      assert.equal(failed + missed, 1, `record first: ${recordFirst}: failed ${failed}, missed ${missed}`);
      assert.equal(failed, recordFirst ? 1 : 0);
    }
  });

  it('applies a batch once: a retry with the same writer and sequence number changes nothing', async () => {
    const { k, job, send } = fresh();
    const batch: RecordBatch = { incr: { runs: 3, failed: 3 }, fails: 3, runs: ['{"outcome":"failed"}'] };
    assert.equal(await send('w#1', 1, batch), true);
    assert.equal(await send('w#1', 1, batch), false);
    assert.equal(await redis.hget(k.stats(job), 'runs'), '3');
    assert.equal(await redis.hget(k.stats(job), 'streak'), '3');
    assert.equal(await redis.llen(k.runs(job)), 1);
    // An older batch arriving late is also ignored; another writer's batch 1 is its own.
    assert.equal(await send('w#1', 2, { incr: { runs: 1 } }), true);
    assert.equal(await send('w#1', 1, batch), false);
    assert.equal(await send('w#2', 1, { incr: { runs: 1 } }), true);
    assert.equal(await redis.hget(k.stats(job), 'runs'), '5');
    const ttl = await redis.pttl(k.writers(job));
    assert.ok(ttl > 0 && ttl <= 60_000, `writers hash expires: ${ttl}`);
  });

  it('keeps the newest last run when batches arrive out of order', async () => {
    const { k, job, send } = fresh();
    const newer = { lastOutcome: 'failed', lastError: 'boom', lastStartedAt: '2026-03-01T10:00:02.000Z', lastDurationMs: '5', lastInstance: 'b' };
    const older = { lastOutcome: 'succeeded', lastError: '', lastStartedAt: '2026-03-01T10:00:01.000Z', lastDurationMs: '7', lastInstance: 'a' };
    await send('b', 1, { last: newer });
    await send('a', 1, { last: older });
    const s = await redis.hgetall(k.stats(job));
    assert.equal(s['lastOutcome'], 'failed');
    assert.equal(s['lastInstance'], 'b');
    assert.equal(s['lastError'], 'boom');
  });

  it('counts the failing streak from the newest success', async () => {
    const { k, job, send } = fresh();
    await send('w', 1, { fails: 2 });
    assert.equal(await redis.hget(k.stats(job), 'streak'), '2');
    await send('w', 2, { successAt: '2026-03-01T10:00:00.000Z', fails: 1 });
    assert.equal(await redis.hget(k.stats(job), 'streak'), '1');
    assert.equal(await redis.hget(k.stats(job), 'lastSuccessAt'), '2026-03-01T10:00:00.000Z');
    // A success older than the stored one does not reset the streak.
    await send('w', 3, { successAt: '2026-03-01T09:00:00.000Z', fails: 1 });
    assert.equal(await redis.hget(k.stats(job), 'streak'), '2');
    assert.equal(await redis.hget(k.stats(job), 'lastSuccessAt'), '2026-03-01T10:00:00.000Z');
  });

  it('tells each applied batch the failing streak before it, so the node that starts or ends a streak knows', async () => {
    const k = keys('record-test-streak');
    const send = async (seq: number, batch: RecordBatch) => {
      const [r] = await recordScript(redis, [{ statsKey: k.stats('j'), instancesKey: k.instanceStats('j'), runsKey: k.runs('j'), stateKey: k.state('j'), writersKey: k.writers('j'), leaseKey: k.lease('j'), writer: `w${seq}`, seq: 1, batch }], { runsCap: 5, keepMs: 60_000 });
      return r;
    };
    assert.deepEqual(await send(1, { incr: { skipped: 1 } }), { applied: true, streakBefore: null }, 'no run that counts: not read');
    assert.deepEqual(await send(2, { fails: 1 }), { applied: true, streakBefore: 0 }, 'this batch starts the streak');
    assert.deepEqual(await send(3, { fails: 2 }), { applied: true, streakBefore: 1 });
    assert.deepEqual(await send(4, { successAt: '2026-03-01T10:00:00.000Z' }), { applied: true, streakBefore: 3 }, 'this batch ends a streak of 3');
    assert.deepEqual(await send(4, { successAt: '2026-03-01T10:00:00.000Z' }), { applied: false, streakBefore: null }, 'a batch applied before tells nothing');
  });

  it('caps the recent-runs list, newest first', async () => {
    const { k, job, send } = fresh();
    await send('w', 1, { runs: ['1', '2', '3'] }, 4);
    await send('w', 2, { runs: ['4', '5', '6'] }, 4);
    assert.deepEqual(await redis.lrange(k.runs(job), 0, -1), ['6', '5', '4', '3']);
  });

  it('keeps per-instance rows apart', async () => {
    const { k, job, send } = fresh();
    await send('a', 1, { inst: { id: 'node.a', incr: { runs: 2, succeeded: 2 }, set: { nextDueAt: 'x' } } });
    await send('b', 1, { inst: { id: 'node-b', incr: { runs: 1, failed: 1 }, last: { lastOutcome: 'failed' } } });
    const inst = await redis.hgetall(k.instanceStats(job));
    assert.equal(inst['node.a.runs'], '2');
    assert.equal(inst['node.a.nextDueAt'], 'x');
    assert.equal(inst['node-b.failed'], '1');
    assert.equal(inst['node-b.lastOutcome'], 'failed');
  });

  it('keeps each writer in named fields: its highest applied batch and when it renewed the expiry', async () => {
    const { k, job, send } = fresh();
    const [s] = await redis.time();
    assert.equal(await send('node-a#1f', 1, { incr: { runs: 1 } }), true);
    assert.equal(await send('node-a#1f', 2, { incr: { runs: 1 } }), true);
    const fields = await redis.hgetall(k.writers(job));
    assert.deepEqual(Object.keys(fields).sort(), ['node-a#1f.renewedAt', 'node-a#1f.seq']);
    assert.equal(fields['node-a#1f.seq'], '2');
    assert.ok(Math.abs(Number(fields['node-a#1f.renewedAt']) - Number(s) * 1000) < 5_000, `renewedAt is Redis time in ms: ${fields['node-a#1f.renewedAt']}`);
  });

  it("expires the writers hash from a writer's first batch on (one batch and no other writer included)", async () => {
    const { k, job, send } = fresh();
    assert.equal(await send('only#1', 1, { incr: { runs: 1 } }), true);
    const ttl = await redis.pttl(k.writers(job));
    assert.ok(ttl > 0 && ttl <= 60_000, `writers hash expires: ${ttl}`);
  });

  it('forgets writers not heard of for keepMs when a new writer comes', async () => {
    const { k, job, send } = fresh();
    await send('recent', 1, {});
    await redis.hset(k.writers(job), 'ancient#1.seq', '7', 'ancient#1.renewedAt', '1000', 'orphan#1.seq', '3', 'garbage', 'x');
    await send('recent', 2, {});
    assert.deepEqual((await redis.hkeys(k.writers(job))).sort(), ['ancient#1.renewedAt', 'ancient#1.seq', 'garbage', 'orphan#1.seq', 'recent.renewedAt', 'recent.seq'], 'only a first batch prunes');
    await send('newcomer', 1, {});
    assert.deepEqual((await redis.hkeys(k.writers(job))).sort(), ['newcomer.renewedAt', 'newcomer.seq', 'recent.renewedAt', 'recent.seq']);
    assert.equal(await redis.hget(k.writers(job), 'recent.seq'), '2');
  });

  it('prune.lua removes only the rows of gone instances last seen before the cutoff', async () => {
    const { k, job } = fresh();
    await redis.hset(k.instanceStats(job), {
      'old.node.runs': '4', 'old.node.seenAt': '2026-01-01T00:00:00.000Z',
      'old.node.x.runs': '1', 'old.node.x.seenAt': '2026-03-01T00:00:00.000Z',
      'fresh.runs': '2', 'fresh.seenAt': '2026-03-01T00:00:00.000Z',
      'noseen.runs': '1',
    });
    const removed = await pruneScript(redis, { instancesKey: k.instanceStats(job), statsKey: k.stats(job), cutoff: '2026-02-01T00:00:00.000Z', instanceIds: ['old.node', 'fresh', 'noseen', 'absent'] });
    assert.equal(removed, 3);
    assert.deepEqual((await redis.hkeys(k.instanceStats(job))).sort(), ['fresh.runs', 'fresh.seenAt', 'old.node.x.runs', 'old.node.x.seenAt']);
    assert.equal(await pruneScript(redis, { instancesKey: k.instanceStats(job), statsKey: k.stats(job), cutoff: 'z', instanceIds: [] }), 0);
  });

  it('applies several jobs\' batches in one pipeline, each on its own', async () => {
    const k = keys('record-test-multi');
    const args = (job: string, batch: RecordBatch) => ({
      statsKey: k.stats(job), instancesKey: k.instanceStats(job), runsKey: k.runs(job), stateKey: k.state(job), writersKey: k.writers(job), leaseKey: k.lease(job),
      writer: 'w', seq: 1, batch,
    });
    await redis.set(k.stats('broken'), 'not a hash');
    const options = { runsCap: 5, keepMs: 60_000 };
    const results = await recordScript(redis, [args('one', { incr: { runs: 1 } }), args('broken', { incr: { runs: 1 } }), args('two', { incr: { runs: 2 } })], options);
    assert.deepEqual(results.map((r) => (r instanceof Error ? 'error' : r.applied)), [true, 'error', true]);
    assert.ok(isLeaseholdError(results[1], 'corruptState'), 'a job\'s key of the wrong type is its own corruptState');
    assert.equal(await redis.hget(k.stats('two'), 'runs'), '2');
    assert.deepEqual(await recordScript(redis, [], options), []);
  });

  it('checks its arguments', async () => {
    const { send } = fresh();
    await assert.rejects(send('w', 0, {}), (err) => isLeaseholdError(err, 'invalidConfig'));
    await assert.rejects(send('w', 1.5, {}), (err) => isLeaseholdError(err, 'invalidConfig'));
    await assert.rejects(send('w', 1, {}, 0), (err) => isLeaseholdError(err, 'invalidConfig'));
  });
});
