/**
 * The stats writer against a real redis-server (SPEC 5): the counters in Redis equal the
 * events exactly, with many writers at once (connections and processes), across a stalled
 * Redis (SIGSTOP: replies lost, batches retried) and a killed and restarted one (AOF).
 */
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys as keyNames, type Keys } from '../src/redis/keys.js';
import { Emitter, type RunOutcome, type SkipReason } from '../src/runner/events.js';
import type { JobView } from '../src/runner/runner.js';
import { normalizeJob } from '../src/schedule/job.js';
import { readDeclaration } from '../src/schedule/setting.js';
import { StatsWriter, type WriterCore } from '../src/status/writer.js';
import type { Trigger } from '../src/schedule/trigger.js';
import { ManualClock } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';
import { ROOT } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

type Totals = Record<string, Record<string, number>>;

const OUTCOMES: RunOutcome[] = ['succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted'];
const REASONS: SkipReason[] = ['overrun', 'claimed', 'paused'];
const SKIP_FIELD = { overrun: 'overruns', claimed: 'skippedClaimed', paused: 'skippedPaused' } as const;

/** A runner stand-in whose events the test emits. */
class FakeCore implements WriterCore {
  readonly emitter = new Emitter((err) => {
    throw err;
  });
  private readonly views: Map<string, JobView>;
  constructor(
    readonly instanceId: string,
    defs: Array<Record<string, unknown>>,
  ) {
    this.views = new Map(
      defs.map((d) => {
        const job = normalizeJob({ run: () => undefined, ...d });
        return [job.id, { job, state: 'ok', invalidCause: undefined, schedule: undefined, declared: readDeclaration(job.schedule, {}), nextDueAt: null, running: undefined }];
      }),
    );
  }
  on: WriterCore['on'] = (event, fn) => this.emitter.on(event, fn);
  jobs(): JobView[] {
    return [...this.views.values()];
  }
  job(id: string): JobView | undefined {
    return this.views.get(id);
  }
  now(): number {
    return Date.now();
  }
  triggerOf(id: string): Trigger | undefined {
    return this.views.get(id)?.schedule?.trigger;
  }
}

/** Emits random events and tallies what Redis should end up with. */
function emitRandom(core: FakeCore, jobIds: string[], n: number, totals: Totals, inst?: Totals): void {
  const bump = (t: Totals, job: string, field: string, by = 1): void => {
    const row = (t[job] ??= {});
    row[field] = (row[field] ?? 0) + by;
  };
  for (let i = 0; i < n; i++) {
    const jobId = jobIds[i % jobIds.length] as string;
    const t = Date.now();
    const r = Math.random();
    if (r < 0.7) {
      const outcome = OUTCOMES[Math.floor(Math.random() * OUTCOMES.length)] as RunOutcome;
      core.emitter.emit('runEnded', {
        jobId, runId: `${core.instanceId}-${i}`, scope: core.job(jobId)?.job.scope ?? 'instance', instanceId: core.instanceId,
        scheduledAt: t, startedAt: t, lagMs: 0, fencingToken: undefined, manual: false, attempt: 1, willRetry: false,
        outcome, endedAt: t, durationMs: 3, error: outcome === 'succeeded' ? undefined : 'boom', cause: undefined,
      });
      bump(totals, jobId, 'runs');
      bump(totals, jobId, outcome);
      if (inst) {
        bump(inst, jobId, 'runs');
        bump(inst, jobId, outcome);
      }
    } else if (r < 0.9) {
      const reason = REASONS[Math.floor(Math.random() * REASONS.length)] as SkipReason;
      core.emitter.emit('skipped', { jobId, scope: 'instance', instanceId: core.instanceId, reason, scheduledAt: t, at: t, recorded: false });
      bump(totals, jobId, 'skipped');
      bump(totals, jobId, SKIP_FIELD[reason]);
    } else {
      core.emitter.emit('missed', { jobId, count: 3, afterTick: t, beforeTick: t });
      bump(totals, jobId, 'missed', 3);
    }
  }
}

function merge(into: Totals, from: Totals): void {
  for (const [job, row] of Object.entries(from)) {
    for (const [f, v] of Object.entries(row)) {
      const r = (into[job] ??= {});
      r[f] = (r[f] ?? 0) + v;
    }
  }
}

async function assertTotals(redis: Redis, k: Keys, totals: Totals): Promise<void> {
  for (const [job, row] of Object.entries(totals)) {
    const stats = await redis.hgetall(k.stats(job));
    for (const field of ['runs', ...OUTCOMES, 'skipped', 'overruns', 'skippedClaimed', 'skippedPaused', 'missed']) {
      assert.equal(Number(stats[field] ?? 'absent'), row[field] ?? 0, `${job}.${field}`);
    }
  }
}

describe('stats writer', () => {
  let server: TestRedis;
  let admin: Redis;
  let n = 0;
  const prefix = () => `writer-test-${++n}`;
  const conn = async (timeoutMs = 500): Promise<Redis> => {
    const c = createRedis({ url: server.url, role: 'stats', commandTimeoutMs: timeoutMs });
    c.on('error', () => undefined);
    await whenReady(c, 5_000);
    return c;
  };

  before(async () => {
    server = await startRedis({ appendonly: true, args: ['--appendfsync', 'always'] });
    admin = server.client();
    admin.on('error', () => undefined); // Redis is killed on purpose below
  });
  after(async () => {
    await server.stop();
  });

  it('writes every field with zeros at registration, then the exact counts', async () => {
    const p = prefix();
    const k = keyNames(p);
    const core = new FakeCore('node-a', [
      { id: 'inst-job', fixedRate: '1s' },
      { id: 'inst-all', scope: 'installation', cron: '0 */5 * * * *', zone: 'Europe/Berlin', description: 'cleans up' },
    ]);
    const redis = await conn();
    const writer = new StatsWriter({ core, redis, keys: k, logger: memoryLogger().logger });
    writer.start();
    assert.equal(await writer.flush(), true);
    const fresh = await admin.hgetall(k.stats('inst-all'));
    for (const f of ['runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'overruns', 'skipped', 'missed']) assert.equal(fresh[f], '0', f);
    for (const f of ['lastOutcome', 'lastError', 'lastStartedAt', 'lastDurationMs', 'lastInstance', 'nextDueAt']) assert.equal(fresh[f], '', f);
    assert.equal(fresh['scope'], 'installation');
    assert.equal(fresh['scheduleKind'], 'cron');
    assert.equal(fresh['schedule'], '0 */5 * * * *');
    assert.equal(fresh['zone'], 'Europe/Berlin');
    assert.equal(fresh['description'], 'cleans up');
    assert.equal((await admin.hgetall(k.instanceStats('inst-job')))['node-a.runs'], '0');

    core.emitter.emit('scheduled', { jobId: 'inst-job', nextDueAt: Date.UTC(2030, 0, 1) });
    core.emitter.emit('jobState', { jobId: 'inst-all', state: 'invalidSchedule', cause: 'cron: hour 25 out of range' });
    const t = Date.UTC(2026, 2, 1, 10);
    core.emitter.emit('runEnded', {
      jobId: 'inst-job', runId: 'r1', scope: 'instance', instanceId: 'node-a', scheduledAt: t - 5, startedAt: t, lagMs: 5,
      fencingToken: undefined, manual: false, attempt: 1, willRetry: false, outcome: 'failed', endedAt: t + 42, durationMs: 42, error: 'upstream said no', cause: undefined,
    });
    assert.equal(await writer.flush(), true);
    const s = await admin.hgetall(k.stats('inst-job'));
    assert.equal(s['runs'], '1');
    assert.equal(s['failed'], '1');
    assert.equal(s['streak'], '1');
    assert.equal(s['lastOutcome'], 'failed');
    assert.equal(s['lastError'], 'upstream said no');
    assert.equal(s['lastStartedAt'], '2026-03-01T10:00:00.000Z');
    assert.equal(s['lastDurationMs'], '42');
    assert.equal(s['lastInstance'], 'node-a');
    assert.equal(s['nextDueAt'], '2030-01-01T00:00:00.000Z');
    const inst = await admin.hgetall(k.instanceStats('inst-job'));
    assert.equal(inst['node-a.runs'], '1');
    assert.equal(inst['node-a.lastOutcome'], 'failed');
    assert.equal(inst['node-a.nextDueAt'], '2030-01-01T00:00:00.000Z');
    const runs = (await admin.lrange(k.runs('inst-job'), 0, -1)).map((r) => JSON.parse(r) as Record<string, unknown>);
    assert.deepEqual(runs, [{
      outcome: 'failed', instance: 'node-a', scheduledAt: '2026-03-01T09:59:59.995Z', startedAt: '2026-03-01T10:00:00.000Z',
      durationMs: 42, error: 'upstream said no', fencingToken: null, manual: false, attempt: 1,
    }]);
    assert.equal(await admin.hget(k.stats('inst-all'), 'invalidCause'), 'cron: hour 25 out of range');
    core.emitter.emit('jobState', { jobId: 'inst-all', state: 'ok', cause: undefined });
    await writer.flush();
    assert.equal(await admin.hget(k.stats('inst-all'), 'invalidCause'), '');
    await writer.stop(1_000);
    await redis.quit();
  });

  it('writes on its own timer after an idle gap, and an idle writer keeps no timer', async () => {
    const p = prefix();
    const k = keyNames(p);
    const core = new FakeCore('node-b', [{ id: 'quiet', scope: 'installation', cron: '0 0 * * * *' }]);
    const redis = await conn();
    const writer = new StatsWriter({ core, redis, keys: k, logger: memoryLogger().logger });
    // Timers created while nothing is pending: each would wake the process for nothing.
    let created = 0;
    const hook = createHook({ init: (_id, type) => void (type === 'Timeout' && created++) });
    const timersDuring = async (ms: number): Promise<number> => {
      created = 0;
      hook.enable();
      await sleep(ms);
      hook.disable();
      return created - 1; // the sleep's own timer
    };
    writer.start();
    const runEnded = (runId: string): void => {
      const t = Date.now();
      core.emitter.emit('runEnded', {
        jobId: 'quiet', runId, scope: 'installation', instanceId: 'node-b', scheduledAt: t, startedAt: t, lagMs: 0,
        fencingToken: 1, manual: false, attempt: 1, willRetry: false, outcome: 'succeeded', endedAt: t, durationMs: 1, error: undefined, cause: undefined,
      });
    };
    const runsInRedis = async (): Promise<string | null> => admin.hget(k.stats('quiet'), 'runs');
    const until = async (want: string): Promise<void> => {
      const deadline = Date.now() + 5_000;
      while ((await runsInRedis()) !== want && Date.now() < deadline) await sleep(20);
      assert.equal(await runsInRedis(), want);
    };
    await until('0');
    await sleep(100);
    assert.equal(await timersDuring(1_000), 0, 'nothing pending: no timer armed');
    runEnded('r-1');
    await until('1');
    await sleep(100);
    assert.equal(await timersDuring(1_000), 0, 'written: no timer armed');
    runEnded('r-2');
    runEnded('r-3');
    await until('3');
    await writer.stop(1_000);
    await redis.quit();
  });

  /** The two jobs of the refresh tests, an installation job and an instance job, on a connection of their own and a manual clock. */
  const refreshCase = async (t: { after(fn: () => unknown): void }) => {
    const k = keyNames(prefix());
    const redis = await conn();
    t.after(() => redis.quit());
    const defs = [{ id: 'shared', scope: 'installation', cron: '0 0 * * * *' }, { id: 'own', scope: 'instance', cron: '0 0 * * * *' }];
    return { k, redis, defs, clock: new ManualClock(Date.now()) };
  };

  it("sends an installation job's minute refresh from the one node that refreshes it, an instance job's from every node", async (t) => {
    const { k, redis, defs, clock } = await refreshCase(t);
    const writers = ['node-a', 'node-b'].map((id) => new StatsWriter({ core: new FakeCore(id, defs), redis, keys: k, logger: memoryLogger().logger, clock, refreshes: () => id === 'node-a' }));
    // Each writer's batches applied so far, by job: `<instanceId>#<nonce>.seq` -> its highest.
    const seqs = async (job: string): Promise<Record<string, number>> =>
      Object.fromEntries(Object.entries(await admin.hgetall(k.writers(job))).filter(([f]) => f.endsWith('.seq')).map(([f, v]) => [f.split('#')[0], Number(v)]));
    const settled = async (want: (s: Record<string, Record<string, number>>) => boolean): Promise<Record<string, Record<string, number>>> => {
      const deadline = Date.now() + 2_000;
      for (;;) {
        await clock.advance(400);
        const now = { shared: await seqs('shared'), own: await seqs('own') };
        if (want(now) || Date.now() > deadline) return now;
        await sleep(20);
      }
    };
    for (const w of writers) w.start();
    await settled((s) => Object.keys(s['shared'] ?? {}).length === 2 && Object.keys(s['own'] ?? {}).length === 2);
    const first = await settled(() => false); // and whatever followed the registration
    assert.deepEqual(Object.keys(first['shared'] ?? {}).sort(), ['node-a', 'node-b'], 'every node registers every job at its start');
    await admin.del(k.stats('shared'));
    await clock.advance(60_000);
    const next = await settled(() => false);
    const grew = (job: string, node: string): number => (next[job]?.[node] ?? 0) - (first[job]?.[node] ?? 0);
    assert.deepEqual([grew('shared', 'node-a') > 0, grew('shared', 'node-b'), grew('own', 'node-a') > 0, grew('own', 'node-b') > 0], [true, 0, true, true]);
    assert.equal(await admin.hget(k.stats('shared'), 'runs'), '0', 'a deleted hash is created again by the refresh');
    for (const w of writers) void w.stop(0);
  });

  it("a minute refresh of jobs that did not run moves their seenAt and leaves their version, so no node reads their stats again for it", async (t) => {
    const { k, redis, defs, clock } = await refreshCase(t);
    const writer = new StatsWriter({ core: new FakeCore('node-a', defs), redis, keys: k, logger: memoryLogger().logger, clock, refreshes: () => true });
    const fields = async (job: string) => admin.hmget(k.stats(job), 'version', 'seenAt', 'description', 'invalidCause');
    const until = async (want: () => Promise<boolean>): Promise<void> => {
      for (const deadline = Date.now() + 3_000; !(await want()) && Date.now() < deadline; ) {
        await clock.advance(400);
        await sleep(20);
      }
    };
    writer.start();
    await until(async () => (await fields('shared'))[0] !== null && (await fields('own'))[0] !== null);
    await until(async () => false); // and whatever followed the registration
    const registered = { shared: await fields('shared'), own: await fields('own') };
    await clock.advance(60_000);
    await until(async () => (await fields('shared'))[1] !== registered.shared[1] && (await fields('own'))[1] !== registered.own[1]);
    for (const job of ['shared', 'own'] as const) {
      const [version, seenAt, ...rest] = await fields(job);
      const [versionBefore, seenAtBefore, ...restBefore] = registered[job];
      assert.ok(seenAt != null && seenAtBefore != null && seenAt > seenAtBefore, `${job}: seenAt ${seenAtBefore} -> ${seenAt}`);
      assert.equal(version, versionBefore, `${job}: the refresh left the version`);
      assert.deepEqual(rest, restBefore);
    }
    void writer.stop(0);
  });

  it('many writers on their own connections: counters equal the events exactly', async () => {
    const p = prefix();
    const k = keyNames(p);
    const jobIds = ['a', 'b', 'c'];
    const totals: Totals = {};
    const writers = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const core = new FakeCore(`node-${i}`, jobIds.map((id) => ({ id, fixedRate: '1s' })));
        const redis = await conn();
        const writer = new StatsWriter({ core, redis, keys: k, logger: memoryLogger().logger });
        writer.start();
        return { core, redis, writer, inst: {} as Totals };
      }),
    );
    for (let round = 0; round < 10; round++) {
      for (const w of writers) emitRandom(w.core, jobIds, 200, totals, w.inst);
      await sleep(Math.random() * 200);
    }
    for (const w of writers) assert.equal(await w.writer.stop(5_000), 0);
    await assertTotals(admin, k, totals);
    for (const [i, w] of writers.entries()) {
      for (const job of jobIds) {
        const row = await admin.hgetall(k.instanceStats(job));
        assert.equal(Number(row[`node-${i}.runs`]), w.inst[job]?.['runs'] ?? 0);
        assert.equal(Number(row[`node-${i}.succeeded`]), w.inst[job]?.['succeeded'] ?? 0);
      }
      await w.redis.quit();
    }
  });

  it('writers in separate processes: counters equal the events exactly', async () => {
    const p = prefix();
    const k = keyNames(p);
    const jobIds = ['x', 'y'];
    const run = (i: number) =>
      new Promise<{ left: number; expected: Totals }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/jobs-status-writer.mjs'], {
          cwd: ROOT,
          env: { ...process.env, REDIS_URL: server.url, PREFIX: p, JOBS: jobIds.join(','), COUNT: '1500', INSTANCE: `proc-${i}` },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.on('exit', (code) => {
          if (code !== 0) reject(new Error(`writer process ${i} exited ${code}: ${err}`));
          else resolve(JSON.parse(out.trim()) as { left: number; expected: Totals });
        });
      });
    const results = await Promise.all([0, 1, 2, 3].map(run));
    const totals: Totals = {};
    for (const r of results) {
      assert.equal(r.left, 0);
      merge(totals, r.expected);
    }
    await assertTotals(admin, k, totals);
  });

  it('a stalled Redis: replies are lost, batches retried, nothing counted twice or lost', async () => {
    const p = prefix();
    const k = keyNames(p);
    const { logger, lines } = memoryLogger();
    const core = new FakeCore('stall', [{ id: 's1', fixedRate: '1s' }, { id: 's2', fixedRate: '1s' }]);
    const redis = await conn(300);
    const writer = new StatsWriter({ core, redis, keys: k, logger });
    writer.start();
    const totals: Totals = {};
    emitRandom(core, ['s1', 's2'], 300, totals);
    await writer.flush();
    emitRandom(core, ['s1', 's2'], 300, totals);
    // Freeze Redis while this batch is on its way: it lands when Redis wakes, but its reply
    // comes after the command timed out, so the writer sends it again.
    server.pause();
    const flushing = writer.flush();
    emitRandom(core, ['s1', 's2'], 300, totals);
    assert.equal(await flushing, false, 'not acknowledged while Redis is frozen');
    await sleep(700);
    emitRandom(core, ['s1', 's2'], 300, totals);
    server.resume();
    for (let i = 0; i < 50 && writer.backlog > 0; i++) await sleep(100);
    assert.equal(writer.backlog, 0);
    assert.ok(writer.counts.duplicates >= 1, `a retried batch was recognised: ${JSON.stringify(writer.counts)}`);
    await assertTotals(admin, k, totals);
    assert.ok(lines.some((l) => String(l['msg']).includes('keeping them in memory')), 'the outage was logged');
    assert.ok(lines.some((l) => String(l['msg']).includes('written to Redis again')), 'the recovery was logged');
    await writer.stop(1_000);
    await redis.quit();
  });

  it('Redis killed and restarted (AOF): counts kept in memory are written when it returns', async () => {
    const p = prefix();
    const k = keyNames(p);
    const core = new FakeCore('restart', [{ id: 'r1', fixedRate: '1s' }]);
    const redis = await conn(300);
    const writer = new StatsWriter({ core, redis, keys: k, logger: memoryLogger().logger });
    writer.start();
    const totals: Totals = {};
    emitRandom(core, ['r1'], 500, totals);
    assert.equal(await writer.flush(), true);
    await server.kill();
    for (let i = 0; i < 5; i++) {
      emitRandom(core, ['r1'], 500, totals);
      await sleep(200);
    }
    assert.ok(writer.backlog > 0);
    await server.restart();
    for (let i = 0; i < 100 && writer.backlog > 0; i++) await sleep(100);
    assert.equal(writer.backlog, 0);
    await assertTotals(admin, k, totals);
    const runs = await admin.llen(k.runs('r1'));
    assert.equal(runs, 50, 'the recent-runs list stays capped');
    await writer.stop(1_000);
    await redis.quit();
  });

  /** A writer of one job that has written its first batch, then Redis paused (resumed by the test). */
  async function writerThenRedisAway(instanceId: string, jobId: string) {
    const k = keyNames(prefix());
    const { logger, lines } = memoryLogger();
    const core = new FakeCore(instanceId, [{ id: jobId, fixedRate: '1s' }]);
    const redis = await conn(200);
    const writer = new StatsWriter({ core, redis, keys: k, logger });
    writer.start();
    await writer.flush();
    server.pause();
    return { core, lines, writer, redis };
  }

  it('stop() with Redis away and no run unwritten (only a next due time) loses no run, and says so at debug only', async () => {
    const { core, lines, writer, redis } = await writerThenRedisAway('quiet', 'q1');
    try {
      core.emitter.emit('scheduled', { jobId: 'q1', nextDueAt: Date.UTC(2030, 0, 1) });
      assert.equal(await writer.stop(600), 1);
      const told = lines.filter((l) => typeof l['unwrittenRuns'] === 'number');
      assert.equal(told.length, 1, 'said once');
      assert.equal(told[0]?.['unwrittenRuns'], 0);
      assert.equal(told[0]?.['level'], 20, `a pending next due time is no lost run: ${String(told[0]?.['msg'])}`);
    } finally {
      server.resume();
    }
    redis.disconnect();
  });

  it('stop() gives up after its bound when Redis is away, and says so', async () => {
    const { core, lines, writer, redis } = await writerThenRedisAway('gone', 'g1');
    try {
      emitRandom(core, ['g1'], 10, {});
      const t0 = Date.now();
      assert.equal(await writer.stop(600), 1);
      assert.ok(Date.now() - t0 < 1_500, 'bounded');
      const told = lines.filter((l) => typeof l['unwrittenRuns'] === 'number');
      assert.equal(told.length, 1, 'said once');
      assert.match(String(told[0]?.['msg']), /the stats of \d+ run\(s\) of 1 job\(s\) that Redis did not acknowledge/);
    } finally {
      server.resume();
    }
    redis.disconnect();
  });
});
