import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { isLeaseholdError } from '../src/errors.js';
import { createLeaseStore, type Lease } from '../src/lease/lease.js';
import { RELEASE_RETRY_MS, redisCoordinator } from '../src/lease/redis-coordinator.js';
import type { HeldLease } from '../src/lease/port.js';
import { systemClock, type Timers } from '../src/clock.js';
import { memoryLogger } from './helpers/log.js';
import { watchLease, type LeaseWatch } from '../src/lease/watcher.js';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys, type Keys } from '../src/redis/keys.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

interface Lost {
  at: number;
  reason: string;
  cause: unknown;
  kind: string;
}

describe('lease watcher', () => {
  let server: TestRedis;
  let leaseConn: Redis;
  let raw: Redis;
  const watches: LeaseWatch[] = [];

  before(async () => {
    server = await startRedis();
    leaseConn = createRedis({ url: server.url, role: 'lease' });
    await whenReady(leaseConn, 5000);
    raw = server.client();
  });
  after(async () => {
    for (const w of watches) w.stop();
    leaseConn.disconnect();
    await server.stop();
  });

  async function claim(leaseMs: number, conn: Redis = leaseConn): Promise<{ lease: Lease; k: Keys; jobId: string }> {
    const k = keys(`lh-watch-${randomUUID()}`);
    const jobId = 'watched';
    const [s] = await raw.time();
    const result = await createLeaseStore(conn, k).claim({ jobId, tick: Number(s) * 1000 - 1000, leaseMs, holder: 'node-a', mode: 'grid' });
    assert.equal(result.kind, 'claimed');
    if (result.kind !== 'claimed') throw new Error('not claimed');
    return { lease: result.lease, k, jobId };
  }

  function watch(lease: Lease, leaseMs: number): { watch: LeaseWatch; lost: Promise<Lost> } {
    let report: (l: Lost) => void = () => undefined;
    const lost = new Promise<Lost>((resolve) => {
      report = resolve;
    });
    const w = watchLease(lease, { leaseMs, onLost: (loss) => report({ at: performance.now(), reason: loss.message, cause: loss.error, kind: loss.cause }) });
    watches.push(w);
    return { watch: w, lost };
  }

  const within = <T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> =>
    Promise.race([promise, sleep(ms, 'timeout' as const)]);

  it('keeps a lease alive for several lease times, then lets it expire after stop', async () => {
    const { lease, k, jobId } = await claim(300);
    const { watch: w, lost } = watch(lease, 300);
    for (let i = 0; i < 6; i++) {
      await sleep(250);
      assert.equal(await raw.get(k.lease(jobId)), lease.value);
      const pttl = await raw.pttl(k.lease(jobId));
      assert.ok(pttl > 0 && pttl <= 300, `pttl ${pttl}`);
    }
    assert.equal(w.lost, false);
    w.stop();
    w.stop();
    await sleep(400);
    assert.equal(await raw.exists(k.lease(jobId)), 0);
    assert.equal(await within(lost, 10), 'timeout', 'no onLost after stop');
  });

  it('reports a deleted lease and does not bring it back', async () => {
    const { lease, k, jobId } = await claim(400);
    const { watch: w, lost } = watch(lease, 400);
    await raw.del(k.lease(jobId));
    const deletedAt = performance.now();
    const result = await within(lost, 1000);
    assert.notEqual(result, 'timeout');
    if (result === 'timeout') return;
    assert.match(result.reason, /gone or held by another/);
    assert.equal(result.kind, 'gone');
    assert.ok(result.at - deletedAt < 600);
    assert.equal(w.lost, true);
    await sleep(50);
    assert.equal(await raw.exists(k.lease(jobId)), 0);
  });

  it('reports a lease that another owner holds, and leaves theirs alone', async () => {
    const { lease, k, jobId } = await claim(400);
    const { lost } = watch(lease, 400);
    const theirs = 'node-b since 2030-01-01T00:00:00.000Z tick 2030-01-01T00:00:00.000Z token 99';
    await raw.set(k.lease(jobId), theirs, 'PX', 60_000);
    const result = await within(lost, 1000);
    assert.notEqual(result, 'timeout');
    assert.equal(await raw.get(k.lease(jobId)), theirs);
    const pttl = await raw.pttl(k.lease(jobId));
    assert.ok(pttl > 58_000, `their TTL untouched: ${pttl}`);
  });

  it('reports loss within the lease time when Redis stalls (SIGSTOP)', async () => {
    const { lease } = await claim(1000);
    const claimedAt = lease.claimedAt;
    const { lost } = watch(lease, 1000);
    server.pause();
    try {
      const result = await within(lost, 3000);
      assert.notEqual(result, 'timeout');
      if (result === 'timeout') return;
      const after = result.at - claimedAt;
      assert.ok(after >= 900 && after < 1500, `onLost ${after}ms after the claim`);
      assert.match(result.reason, /did not confirm/);
      assert.equal(result.kind, 'redisStalled');
    } finally {
      server.resume();
    }
  });

  it('reports an extension that fails with the error as cause', async () => {
    const conn = createRedis({ url: server.url, role: 'lease' });
    await whenReady(conn, 5000);
    const { lease } = await claim(300, conn);
    const { lost } = watch(lease, 300);
    conn.disconnect();
    const result = await within(lost, 1000);
    assert.notEqual(result, 'timeout');
    if (result === 'timeout') return;
    assert.match(result.reason, /extending the lease failed/);
    assert.equal(result.kind, 'redisFailed');
    assert.ok(isLeaseholdError(result.cause, 'redisError'));
  });

  it('reports a blocked event loop that slept through the deadline', async () => {
    const { lease } = await claim(300);
    const { lost } = watch(lease, 300);
    const until = performance.now() + 450;
    while (performance.now() < until) {
      // Block the event loop, as CPU-heavy code in a handler would.
    }
    const result = await within(lost, 500);
    assert.notEqual(result, 'timeout');
    if (result === 'timeout') return;
    assert.match(result.reason, /after the lease deadline/);
    assert.equal(result.kind, 'loopBlocked');
  });

  it('extends every half lease time and stops extending at stop()', async () => {
    const calls: number[] = [];
    const start = performance.now();
    const fake: Lease = {
      jobId: 'fake', tick: 0, token: 1, value: 'v', claimedAt: start,
      extend: async (leaseMs, deadlineMs) => {
        calls.push(performance.now() - start);
        assert.equal(leaseMs, 200);
        assert.ok(deadlineMs !== undefined && deadlineMs > performance.now());
        return true;
      },
      release: async () => true,
    };
    const w = watchLease(fake, { leaseMs: 200, onLost: () => assert.fail('not lost') });
    await sleep(560);
    w.stop();
    const seen = calls.length;
    assert.ok(seen >= 4 && seen <= 6, `extended ${seen} times in 560ms`);
    assert.ok((calls[0] ?? 0) >= 95, `first extension at ${calls[0]}ms`);
    await sleep(300);
    assert.equal(calls.length, seen, 'no extension after stop');
  });

  it('runs on the clock the coordinator was given: its lease store\'s claim times and its watcher\'s timers', async () => {
    const armed: number[] = [];
    let monotonicReads = 0;
    const clock: Timers = {
      ...systemClock,
      monotonic: () => {
        monotonicReads++;
        return systemClock.monotonic();
      },
      setTimer: (fn, ms, background) => {
        armed.push(ms);
        return systemClock.setTimer(fn, ms, background);
      },
    };
    const { logger } = memoryLogger();
    const coordinator = redisCoordinator({ redis: leaseConn, keys: keys(`lh-clock-${randomUUID()}`), instanceId: 'node-a', logger, ownsConnection: false, clock });
    const [s] = await raw.time();
    const result = await coordinator.claim({ jobId: 'clocked', tick: Number(s) * 1000 - 1000, leaseMs: 400, mode: 'grid', countSkip: false });
    assert.equal(result.kind, 'claimed');
    if (result.kind !== 'claimed') return;
    assert.ok(monotonicReads >= 1, 'the claim time is read on the given clock');
    const handle = result.lease.watch(400, () => assert.fail('not lost'));
    assert.equal(armed.length, 1, 'the watcher arms its timer on the given clock');
    assert.ok((armed[0] ?? 0) > 0 && (armed[0] ?? 0) <= 200, `half the lease time from the claim: ${armed[0]}`);
    handle.stop();
    assert.equal(await result.lease.release(undefined), true);
    await coordinator.close();
  });

  it('measures its offset to Redis time again at once when Redis refuses claims as late though it answered at once (a failover to a server whose clock is off)', async () => {
    let shift = 0;
    const clock: Timers = { ...systemClock, monotonic: () => systemClock.monotonic() + shift };
    const { logger, lines } = memoryLogger();
    const coordinator = redisCoordinator({ redis: leaseConn, keys: keys(`lh-skew-${randomUUID()}`), instanceId: 'node-a', logger, ownsConnection: false, clock });
    await coordinator.start();
    const tick = async (): Promise<number> => Number((await raw.time())[0]) * 1000 - 1000;
    // From here the node's reading of Redis time is 5 s behind, as after a failover to a
    // server whose clock is 5 s ahead of the old one's.
    shift = -5_000;
    await assert.rejects(coordinator.claim({ jobId: 'skew', tick: await tick(), leaseMs: 400, mode: 'grid', countSkip: false }), (err) => isLeaseholdError(err, 'redisError') && /after its node stopped waiting/.test(err.message));
    await sleep(200);
    const next = await coordinator.claim({ jobId: 'skew', tick: (await tick()) + 1000, leaseMs: 400, mode: 'grid', countSkip: false });
    assert.equal(next.kind, 'claimed', 'measured again: in time');
    if (next.kind === 'claimed') await next.lease.release(undefined);
    assert.ok(lines.some((l) => /measuring the offset to Redis time again/.test(String(l['msg']))), 'said once, at info');
    await coordinator.close();
  });

  it('claims in time on a wall clock seconds slow before its offset to Redis time is measured, and once it is', async () => {
    // The wall clock is all a coordinator has until its first measurement (Redis may be down at
    // start): a claim's answer time read off it would be past on Redis before the claim was sent.
    const slow: Timers = { ...systemClock, now: () => systemClock.now() - 5_000 };
    const { logger } = memoryLogger();
    const coordinator = redisCoordinator({ redis: leaseConn, keys: keys(`lh-slow-${randomUUID()}`), instanceId: 'node-a', logger, ownsConnection: false, clock: slow });
    const tick = async (): Promise<number> => Number((await raw.time())[0]) * 1000 - 1000;
    const before = await coordinator.claim({ jobId: 'slow', tick: await tick(), leaseMs: 400, mode: 'grid', countSkip: false });
    assert.equal(before.kind, 'claimed', 'not measured yet');
    if (before.kind === 'claimed') await before.lease.release(undefined);
    await coordinator.start();
    await sleep(1_000);
    const after = await coordinator.claim({ jobId: 'slow', tick: await tick(), leaseMs: 400, mode: 'grid', countSkip: false });
    assert.equal(after.kind, 'claimed', 'measured');
    if (after.kind === 'claimed') await after.lease.release(undefined);
    await coordinator.close();
  });

  it('sends a release that Redis did not answer again once the connection is back, a fixedDelay delay counted from the first try', async () => {
    // A connection of its own, cut by Redis: the release fails at once (no offline queue), and
    // ioredis reconnects within a few hundred ms.
    const conn = createRedis({ url: server.url, role: 'lease' });
    await whenReady(conn, 5000);
    const { logger, lines } = memoryLogger();
    const k = keys(`lh-retry-${randomUUID()}`);
    const coordinator = redisCoordinator({ redis: conn, keys: k, instanceId: 'node-a', logger, ownsConnection: true });
    try {
      const [s] = await raw.time();
      const result = await coordinator.claim({ jobId: 'retried', tick: Number(s) * 1000 - 1000, leaseMs: 30_000, mode: 'grid', countSkip: false });
      assert.equal(result.kind, 'claimed');
      if (result.kind !== 'claimed') return;
      await raw.client('KILL', 'ID', String(await conn.client('ID')));
      const cut = Date.now();
      while (conn.status === 'ready' && Date.now() - cut < 2_000) await sleep(5);
      const [sec, micro] = await raw.time();
      const failedAt = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
      await assert.rejects(result.lease.release(10_000), (err) => isLeaseholdError(err, 'redisError'));
      const start = Date.now();
      while ((await raw.exists(k.lease('retried'))) === 1 && Date.now() - start < 5_000) await sleep(20);
      assert.equal(await raw.exists(k.lease('retried')), 0, 'released once the connection was back, not 30 s later');
      const due = Number(await raw.hget(k.state('retried'), 'due'));
      assert.ok(Math.abs(due - (failedAt + 10_000)) < RELEASE_RETRY_MS / 2, `the next start is 10 s after the first try, not after the retry: ${due - failedAt} ms`);
      assert.ok(lines.some((l) => /released the lease of job retried \(token \d+\) once Redis answered again/.test(String(l['msg']))), 'said at info');
    } finally {
      await coordinator.close();
    }
  });

  it('stops sending a release again once the lease would have expired, and at close', async () => {
    const retriesArmed = (): number => armed.filter((ms) => ms === RELEASE_RETRY_MS).length;
    const armed: number[] = [];
    const clock: Timers = {
      ...systemClock,
      setTimer: (fn, ms, background) => {
        armed.push(ms);
        return systemClock.setTimer(fn, ms, background);
      },
    };
    const claimOn = async (conn: Redis, coordinator: ReturnType<typeof redisCoordinator>, leaseMs: number): Promise<HeldLease | undefined> => {
      const [s] = await raw.time();
      const result = await coordinator.claim({ jobId: 'gone', tick: Number(s) * 1000 - 1000, leaseMs, mode: 'grid', countSkip: false });
      assert.equal(result.kind, 'claimed');
      // Closed for good: every release fails at once.
      conn.disconnect();
      return result.kind === 'claimed' ? result.lease : undefined;
    };
    const { logger, lines } = memoryLogger();
    const short = createRedis({ url: server.url, role: 'lease' });
    await whenReady(short, 5000);
    const expiring = redisCoordinator({ redis: short, keys: keys(`lh-expire-${randomUUID()}`), instanceId: 'node-a', logger, ownsConnection: false, clock });
    const lease = await claimOn(short, expiring, 1_200);
    await assert.rejects(lease?.release(undefined) ?? Promise.resolve(), (err) => isLeaseholdError(err, 'redisError'));
    await sleep(2_500);
    assert.equal(retriesArmed(), Math.floor(1_200 / RELEASE_RETRY_MS), `tried again every ${RELEASE_RETRY_MS} ms while the lease could still be held`);
    assert.ok(lines.some((l) => /stopped trying to release the lease of job gone .*it has expired by now/.test(String(l['msg']))), 'said once it stopped');
    await expiring.close();

    armed.length = 0;
    const long = createRedis({ url: server.url, role: 'lease' });
    await whenReady(long, 5000);
    const closing = redisCoordinator({ redis: long, keys: keys(`lh-closing-${randomUUID()}`), instanceId: 'node-a', logger, ownsConnection: false, clock });
    const held = await claimOn(long, closing, 30_000);
    await assert.rejects(held?.release(undefined) ?? Promise.resolve(), (err) => isLeaseholdError(err, 'redisError'));
    await sleep(RELEASE_RETRY_MS * 1.5);
    const before = retriesArmed();
    assert.ok(before >= 2, `tried again: ${before}`);
    await closing.close();
    await sleep(RELEASE_RETRY_MS * 2.5);
    assert.equal(retriesArmed(), before, 'no release sent again after close');
  });

  it('refuses a nonsense lease time', async () => {
    const { lease } = await claim(300);
    assert.throws(() => watchLease(lease, { leaseMs: 0, onLost: () => undefined }), (err) => isLeaseholdError(err, 'invalidConfig'));
    await lease.release();
  });
});
