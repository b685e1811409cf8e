import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { isLeaseholdError } from '../src/errors.js';
import { createLeaseStore, type Lease, type LeaseClaim, type LeaseStore, type LeaseStoreOptions } from '../src/lease/lease.js';
import { holderOf, type ClaimResult } from '../src/redis/claim.js';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys, type Keys } from '../src/redis/keys.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

/** What a provider under contract gives the suite. */
interface Provider {
  store(k: Keys, options?: LeaseStoreOptions): LeaseStore;
  raw: Redis;
  serverNowMs(): Promise<number>;
}

function claimed(result: ClaimResult<Lease>): Extract<ClaimResult<Lease>, { kind: 'claimed' }> {
  assert.equal(result.kind, 'claimed', JSON.stringify(result));
  return result as Extract<ClaimResult<Lease>, { kind: 'claimed' }>;
}

/** The lease store contract; every store implementation must pass it. */
function leaseStoreContract(name: string, provider: () => Provider): void {
  describe(`lease store contract: ${name}`, () => {
    let p: Provider;
    let k: Keys;
    let store: LeaseStore;
    let base: number;
    const job = 'contract.job';
    const req = (tick: number, extra: Partial<LeaseClaim> = {}): LeaseClaim => ({
      jobId: job, tick, leaseMs: 5000, holder: 'node-a', mode: 'grid', ...extra,
    });

    before(() => {
      p = provider();
    });

    // A fresh prefix per test: no test sees another's keys.
    const fresh = async (): Promise<void> => {
      k = keys(`lh-contract-${randomUUID()}`);
      store = p.store(k);
      base = (await p.serverNowMs()) - 60_000;
    };

    it('claims a fresh tick with token 1 and a value an operator can read', async () => {
      await fresh();
      const result = claimed(await store.claim(req(base)));
      assert.equal(result.token, 1);
      assert.equal(result.previousTick, null);
      assert.equal(result.lease.token, 1);
      assert.equal(result.lease.tick, base);
      assert.match(result.lease.value, /^node-a since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z tick \d{4}-.*Z token 1$/);
      assert.ok(result.lease.value.includes(`tick ${new Date(base).toISOString()}`));
      assert.equal(await p.raw.get(k.lease(job)), result.lease.value);
      const pttl = await p.raw.pttl(k.lease(job));
      assert.ok(pttl > 4000 && pttl <= 5000, `pttl ${pttl}`);
      assert.equal(await p.raw.hget(k.state(job), 'tick'), String(base));
      assert.ok(Math.abs(result.serverNowMs - (base + 60_000)) < 5000);
    });

    it('never claims a tick twice, nor an older one', async () => {
      await fresh();
      const first = claimed(await store.claim(req(base + 1000)));
      assert.deepEqual(await store.claim(req(base + 1000, { holder: 'node-b' })), { kind: 'done', lastTick: base + 1000, counted: false });
      assert.equal(await first.lease.release(), true);
      assert.deepEqual(await store.claim(req(base + 1000, { holder: 'node-b' })), { kind: 'done', lastTick: base + 1000, counted: false });
      assert.deepEqual(await store.claim(req(base, { holder: 'node-b' })), { kind: 'done', lastTick: base + 1000, counted: false });
    });

    it('reports a held lease with its holder and time to live', async () => {
      await fresh();
      const first = claimed(await store.claim(req(base)));
      const held = await store.claim(req(base + 1000, { holder: 'node-b' }));
      assert.equal(held.kind, 'held');
      if (held.kind !== 'held') return;
      assert.equal(held.holder, 'node-a');
      assert.equal(held.value, first.lease.value);
      assert.ok(held.pttlMs > 4000 && held.pttlMs <= 5000);
      assert.equal(await p.raw.get(k.lease(job)), first.lease.value);
    });

    it('hands the next tick over after release, counting from the previous tick', async () => {
      await fresh();
      const first = claimed(await store.claim(req(base)));
      assert.equal(await first.lease.release(), true);
      assert.equal(await p.raw.exists(k.lease(job)), 0);
      const second = claimed(await store.claim(req(base + 3000, { holder: 'node-b' })));
      assert.equal(second.token, 2);
      assert.equal(second.previousTick, base);
      assert.match(second.lease.value, /^node-b since .* token 2$/);
    });

    it('lets another instance take over once a dead holder\'s lease expires', async () => {
      await fresh();
      claimed(await store.claim(req(base, { leaseMs: 200 })));
      assert.equal((await store.claim(req(base + 1, { holder: 'node-b' }))).kind, 'held');
      await sleep(300);
      const next = claimed(await store.claim(req(base + 1, { holder: 'node-b' })));
      assert.equal(next.token, 2);
    });

    it('refuses a claim that reaches Redis after its answer time, so no lease is left that nobody runs, and leaves its tick to a claim in time', async () => {
      await fresh();
      const now = await p.serverNowMs();
      const late = p.store(k, { answerBy: () => now - 1 });
      await assert.rejects(late.claim(req(base)), (err) => {
        assert.ok(isLeaseholdError(err, 'redisError'), String(err));
        assert.match(err.message, /claim reached Redis \d+ ms after its node stopped waiting for the answer/);
        assert.match(err.message, /tick .* of "contract\.job" not claimed/);
        return true;
      });
      assert.equal(await p.raw.exists(k.lease(job)), 0, 'no lease');
      assert.equal(await p.raw.hget(k.state(job), 'fence'), null, 'no token minted');
      assert.equal(await p.raw.hget(k.state(job), 'tick'), null, 'the tick is left as it was');
      // Another node's claim of the tick (its backup) in time: it runs there.
      await claimed(await store.claim(req(base, { holder: 'node-b' }))).lease.release();
      // In time: claimed as ever.
      const later = await p.serverNowMs();
      claimed(await p.store(k, { answerBy: () => later + 5_000 }).claim(req(base + 1000)));
    });

    it('reads a claim\'s answer time as it is sent, not when it was asked for: the event loop may be busy in between', async () => {
      await fresh();
      const readAt: number[] = [];
      const timed = p.store(k, { answerBy: () => { readAt.push(performance.now()); return undefined; } });
      const askedAt = performance.now();
      const answer = timed.claim(req(base));
      while (performance.now() - askedAt < 300); // a job's synchronous work
      claimed(await answer);
      assert.equal(readAt.length, 1);
      assert.ok((readAt[0] ?? 0) - askedAt >= 300, `read ${Math.round((readAt[0] ?? 0) - askedAt)} ms after the claim was asked for`);
    });


    it('says early before the tick, within the tolerance it claims', async () => {
      await fresh();
      const now = await p.serverNowMs();
      const early = await store.claim(req(now + 30_000));
      assert.equal(early.kind, 'early');
      if (early.kind === 'early') assert.ok(Math.abs(early.serverNowMs - now) < 5000);
      assert.equal(await p.raw.exists(k.lease(job), k.state(job)), 0);
      claimed(await store.claim(req(now + 3000, { nowGuardMs: 10_000 })));
    });

    it('accepts a claim as early as it says it was sent, and no earlier', async () => {
      await fresh();
      const now = await p.serverNowMs();
      assert.equal((await store.claim(req(now + 150))).kind, 'early', 'without a lead: the default tolerance (20 ms)');
      assert.equal((await store.claim(req(now + 400, { leadMs: 150 }))).kind, 'early', 'sent 150 ms ahead, it is not 400 ms early');
      claimed(await store.claim(req(now + 150, { leadMs: 150 })));
    });

    it('waits the fixed delay after the previous run ended on any instance', async () => {
      await fresh();
      const first = claimed(await store.claim(req(base, { mode: 'delay' })));
      const releasedNear = await p.serverNowMs();
      assert.equal(await first.lease.release(300), true);
      const due = Number(await p.raw.hget(k.state(job), 'due'));
      assert.ok(Math.abs(due - (releasedNear + 300)) < 100, `due ${due}`);
      const notDue = await store.claim(req(base + 1, { mode: 'delay', holder: 'node-b' }));
      assert.deepEqual(notDue, { kind: 'notDue', dueMs: due });
      await sleep(350);
      const second = claimed(await store.claim(req(due, { mode: 'delay', holder: 'node-b' })));
      assert.equal(second.previousTick, base);
      assert.equal(await second.lease.release(), true);
      assert.equal(Number(await p.raw.hget(k.state(job), 'due')), due, 'release without delay leaves due alone');
    });

    it('ignores the fixed delay due time for grid schedules', async () => {
      await fresh();
      await p.raw.hset(k.state(job), 'due', String(base + 600_000));
      claimed(await store.claim(req(base)));
    });

    it('orders its checks: done before notDue before held', async () => {
      await fresh();
      const first = claimed(await store.claim(req(base, { mode: 'delay' })));
      await p.raw.hset(k.state(job), 'due', String(base + 10_000));
      assert.equal((await store.claim(req(base, { mode: 'delay' }))).kind, 'done');
      assert.equal((await store.claim(req(base + 1, { mode: 'delay' }))).kind, 'notDue');
      assert.equal((await store.claim(req(base + 10_000, { mode: 'delay' }))).kind, 'held');
      assert.equal(await first.lease.release(), true);
    });

    it('mints strictly increasing fencing tokens', async () => {
      await fresh();
      let last = 0;
      for (let i = 0; i < 25; i++) {
        const result = claimed(await store.claim(req(base + i, { holder: i % 2 === 0 ? 'node-a' : 'node-b' })));
        assert.ok(result.token > last);
        assert.equal(result.previousTick, i === 0 ? null : base + i - 1);
        last = result.token;
        await result.lease.release();
      }
      assert.equal(await p.raw.hget(k.state(job), 'fence'), '25');
    });

    it('extends only its own lease', async () => {
      await fresh();
      const { lease } = claimed(await store.claim(req(base, { leaseMs: 300 })));
      await sleep(150);
      assert.equal(await lease.extend(2000), true);
      const pttl = await p.raw.pttl(k.lease(job));
      assert.ok(pttl > 1500 && pttl <= 2000, `pttl ${pttl}`);
      assert.equal(await p.raw.get(k.lease(job)), lease.value);
    });

    it('never revives, deletes or overwrites a lost lease', async () => {
      await fresh();
      const { lease: lost } = claimed(await store.claim(req(base, { leaseMs: 150, mode: 'delay' })));
      await sleep(250);
      assert.equal(await lost.extend(5000), false);
      assert.equal(await p.raw.exists(k.lease(job)), 0, 'an expired lease is not revived');
      const { lease: theirs } = claimed(await store.claim(req(base + 1, { holder: 'node-b', mode: 'delay' })));
      assert.equal(await lost.extend(60_000), false);
      assert.equal(await lost.release(1000), false);
      assert.equal(await p.raw.get(k.lease(job)), theirs.value);
      const pttl = await p.raw.pttl(k.lease(job));
      assert.ok(pttl > 4000 && pttl <= 5000, `their TTL untouched: ${pttl}`);
      assert.equal(await p.raw.hget(k.state(job), 'due'), null, 'a lost lease sets no due time');
      assert.equal(await theirs.release(), true);
    });

    it('answers false at once when the extension deadline has passed', async () => {
      await fresh();
      const { lease } = claimed(await store.claim(req(base)));
      assert.equal(await lease.extend(5000, performance.now() - 1), false);
      assert.equal(await lease.extend(5000, performance.now() + 1000), true);
    });

    it('parses holders from lease values', () => {
      assert.equal(holderOf('host-1 since 2024-01-01T00:00:00.000Z tick x token 3'), 'host-1');
      assert.equal(holderOf('written by hand'), 'written by hand');
    });
  });
}

describe('redis lease store', () => {
  let server: TestRedis;
  let lease: Redis;
  let raw: Redis;
  before(async () => {
    server = await startRedis();
    lease = createRedis({ url: server.url, role: 'lease', commandTimeoutMs: 300 });
    await whenReady(lease, 5000);
    raw = server.client();
  });
  after(async () => {
    lease.disconnect();
    await server.stop();
  });

  leaseStoreContract('redis', () => ({
    store: (k, options) => createLeaseStore(lease, k, options),
    raw,
    async serverNowMs() {
      const [s, us] = await raw.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    },
  }));

  describe('claims and releases made together', () => {
    /** EVALSHA and EVAL calls Redis has executed so far (its command stats). */
    const scriptCalls = async (): Promise<number> => {
      const info = await raw.info('commandstats');
      let calls = 0;
      for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1]);
      return calls;
    };

    it('sends the claims of 30 jobs due at once as one script call, each decided on its own', async () => {
      const k = keys(`lh-batch-${randomUUID()}`);
      const store = createLeaseStore(lease, k);
      const other = createLeaseStore(lease, k);
      const [s] = await raw.time();
      const tick = Number(s) * 1000 - 1000;
      // Job 0 was claimed by another node already; job 1's lease is held by an earlier run.
      claimed(await other.claim({ jobId: 'job-0', tick, leaseMs: 5000, holder: 'b', mode: 'grid' }));
      claimed(await other.claim({ jobId: 'job-1', tick: tick - 1000, leaseMs: 5000, holder: 'b', mode: 'grid' }));
      const before = await scriptCalls();
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        store.claim({ jobId: `job-${i}`, tick, leaseMs: 5000, holder: 'a', mode: 'grid', countSkip: true })));
      assert.equal(await scriptCalls() - before, 1, 'one call for the 30 claims');
      assert.deepEqual(results.slice(0, 2).map((r) => r.kind), ['done', 'held']);
      for (const r of results.slice(2)) assert.equal(claimed(r).token, 1);
      assert.equal(await raw.hget(k.stats('job-0'), 'skippedClaimed'), '1');

      const leases = results.slice(2).map((r) => claimed(r).lease);
      const released = await Promise.all(leases.map((l) => l.release()));
      assert.deepEqual(released, leases.map(() => true));
      assert.equal(await scriptCalls() - before, 2, 'one call for the 28 releases');
      assert.equal(await raw.exists(...leases.map((l) => k.lease(l.jobId))), 0);
    });

    it('answers the backups of ticks claimed already with one read and no script call, and claims the others', async () => {
      const k = keys(`lh-backup-${randomUUID()}`);
      const first = createLeaseStore(lease, k);
      const backup = createLeaseStore(lease, k);
      const [s] = await raw.time();
      const tick = Number(s) * 1000 - 1000;
      // The first claimer has jobs 0 to 3; it missed job 4 (down, or slow); job 5 is paused.
      const leases: Lease[] = [];
      for (let i = 0; i < 4; i++) leases.push(claimed(await first.claim({ jobId: `job-${i}`, tick, leaseMs: 5000, holder: 'first', mode: 'grid' })).lease);
      const before = await scriptCalls();
      const reads = Number(/^cmdstat_hget:calls=(\d+)/m.exec(await raw.info('commandstats'))?.[1] ?? 0);
      const results = await Promise.all(Array.from({ length: 5 }, (_, i) =>
        backup.claim({ jobId: `job-${i}`, tick, leaseMs: 5000, holder: 'backup', mode: 'grid', backup: true })));
      assert.deepEqual(results.slice(0, 4), Array.from({ length: 4 }, () => ({ kind: 'done', lastTick: tick, counted: false })));
      assert.equal(claimed(results[4] as ClaimResult<Lease>).lease.value.startsWith('backup since'), true, 'the tick nobody claimed is the backup\'s');
      assert.equal(await scriptCalls() - before, 1, 'one script call, for the one tick not claimed');
      const readsAfter = Number(/^cmdstat_hget:calls=(\d+)/m.exec(await raw.info('commandstats'))?.[1] ?? 0);
      assert.equal(readsAfter - reads, 5, 'one read of each job\'s last claimed tick');
      assert.equal(await raw.hget(k.stats('job-0'), 'skipped'), null, 'a backup finding the tick taken counts no skip');
      // A later tick, its run before done: the backup's read finds it not claimed, and the claim decides.
      assert.equal(await leases[0]?.release(), true);
      const later = claimed(await backup.claim({ jobId: 'job-0', tick: tick + 1, leaseMs: 5000, holder: 'backup', mode: 'grid', backup: true }));
      assert.equal(later.previousTick, tick);
      // A state key of another type: the read is refused, and the claim says what it found.
      await raw.set(k.state('job-9'), 'not a hash');
      const damaged = await backup.claim({ jobId: 'job-9', tick, leaseMs: 5000, holder: 'backup', mode: 'grid', backup: true }).then((r) => r, (err: unknown) => err);
      assert.ok(isLeaseholdError(damaged, 'corruptState'), String(damaged));
    });

    it('answers one job\'s bad arguments with its own error and claims the others', async () => {
      const k = keys(`lh-batch-bad-${randomUUID()}`);
      const store = createLeaseStore(lease, k);
      const [s] = await raw.time();
      const tick = Number(s) * 1000 - 1000;
      const [bad, good] = await Promise.allSettled([
        store.claim({ jobId: 'bad', tick: tick + 0.5, leaseMs: 5000, holder: 'a', mode: 'grid' }),
        store.claim({ jobId: 'good', tick, leaseMs: 5000, holder: 'a', mode: 'grid' }),
      ]);
      assert.equal(bad.status, 'rejected');
      assert.ok(bad.status === 'rejected' && isLeaseholdError(bad.reason, 'invalidConfig') && /tick/.test(bad.reason.message));
      assert.equal(good.status === 'fulfilled' && good.value.kind, 'claimed');
      assert.equal(await raw.exists(k.lease('bad')), 0);
    });

    it('sends at most 100 jobs per call', async () => {
      const k = keys(`lh-batch-many-${randomUUID()}`);
      const store = createLeaseStore(lease, k);
      const [s] = await raw.time();
      const tick = Number(s) * 1000 - 1000;
      const before = await scriptCalls();
      const results = await Promise.all(Array.from({ length: 250 }, (_, i) =>
        store.claim({ jobId: `j${i}`, tick, leaseMs: 5000, holder: 'a', mode: 'grid' })));
      assert.equal(results.filter((r) => r.kind === 'claimed').length, 250);
      assert.equal(await scriptCalls() - before, 3);
    });

    it('sends one call per claim when batching is off (as on a Redis Cluster)', async () => {
      const k = keys(`lh-batch-off-${randomUUID()}`);
      const store = createLeaseStore(lease, k, { batch: false });
      const [s] = await raw.time();
      const tick = Number(s) * 1000 - 1000;
      const before = await scriptCalls();
      await Promise.all(Array.from({ length: 5 }, (_, i) => store.claim({ jobId: `j${i}`, tick, leaseMs: 5000, holder: 'a', mode: 'grid' })));
      assert.equal(await scriptCalls() - before, 5);
    });
  });

  describe('when Redis fails', () => {
    it('throws redisError from claim, so a broken Redis is never "someone else\'s turn"', async () => {
      const k = keys(`lh-fail-${randomUUID()}`);
      const store = createLeaseStore(lease, k);
      const [s] = await raw.time();
      const tick = Number(s) * 1000 - 10_000;
      const { lease: held } = claimed(await store.claim({ jobId: 'j', tick, leaseMs: 5000, holder: 'a', mode: 'grid' }));
      server.pause();
      try {
        await assert.rejects(store.claim({ jobId: 'j', tick: tick + 1, leaseMs: 5000, holder: 'a', mode: 'grid' }),
          (err) => isLeaseholdError(err, 'redisError') && err.cause instanceof Error && /^Redis at 127\.0\.0\.1:\d+ is unreachable: [^;]+; tick \S+Z of "j" not claimed$/.test(err.message));
        await assert.rejects(store.claim({ jobId: 'j', tick: tick + 1, leaseMs: 5000, holder: 'a', mode: 'grid', backup: true }),
          (err) => isLeaseholdError(err, 'redisError') && /^Redis at 127\.0\.0\.1:\d+ is unreachable: [^;]+; tick \S+Z of "j" not claimed$/.test(err.message),
          'a backup\'s read that gets no answer fails as its claim would');
        const started = performance.now();
        assert.equal(await held.extend(5000, performance.now() + 150), false, 'no answer before the deadline is lost');
        assert.ok(performance.now() - started < 280, 'the deadline is kept, not the command timeout');
        await assert.rejects(held.extend(5000), (err) => isLeaseholdError(err, 'redisError'));
        await assert.rejects(held.release(), (err) => isLeaseholdError(err, 'redisError'));
      } finally {
        server.resume();
      }
      // Commands that timed out here were still queued in Redis and ran on
      // resume: the release went through after all.
      assert.equal(await held.release(), false);
      assert.equal(await raw.exists(k.lease('j')), 0);
    });
  });
});
