/**
 * The stats writer: a listener of the runner's events that merges outcomes, skips and
 * missed ticks per job and writes them through `record.lua` (many jobs' batches per call),
 * {@link FLUSH_MS} after something became pending and at most that often; with nothing
 * pending no timer is armed. While Redis is away the batches stay in memory (merged, so
 * bounded by the number of jobs) and are retried with backoff; a batch is retried with
 * the same sequence number until Redis acknowledges it, so it never counts twice.
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import type { RunnerCore } from '../runner/runner.js';
import type { Keys } from '../redis/keys.js';
import { recordScript, type RecordBatch } from '../redis/scripts.js';
import { JobBatch, iso } from './batch.js';
import { describeJob } from './describe.js';
import { errorMessage } from '../errors.js';
import { every, sleep, systemClock, waitAtMost, type Repeating, type TimerHandle, type Timers } from '../clock.js';

/** Pause between two writes of a job's batch, in ms. */
const FLUSH_MS = 300;
/** Longest wait between two attempts while Redis fails, in ms. */
const MAX_BACKOFF_MS = 2_000;
/** Every job's fields are refreshed (created if absent, `seenAt`) this often, in ms. */
const TOUCH_MS = 60_000;
/** Length of each job's recent-runs list, unless configured (`recentRuns`). */
const RUNS_CAP = 50;
/** Batches sent in one pipeline. */
const CHUNK = 200;
/** How long the batches hash of a job outlives its last batch, in ms. */
const BATCHES_KEEP_MS = 7 * 24 * 3_600_000;

/** What the writer needs of a runner. */
export type WriterCore = Pick<RunnerCore, 'instanceId' | 'on' | 'jobs' | 'job' | 'now' | 'triggerOf'>;

/** What the writer has done, for tests and diagnostics. */
export interface WriterCounts {
  /** Batches Redis applied. */
  applied: number;
  /** Batches Redis had applied before (a retry after a lost reply). */
  duplicates: number;
  /** Failed attempts. */
  failures: number;
}

/** Options of {@link StatsWriter}. */
export interface StatsWriterOptions {
  readonly core: WriterCore;
  /** A `stats` connection. */
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly logger: Logger;
  /** Called with the ids of jobs seen for the first time (the registry adds them to the job set). */
  readonly onNewJob?: (jobId: string) => void;
  /** Timers; default the system's. */
  readonly clock?: Timers;
  /** How many recent runs each job keeps; default {@link RUNS_CAP}. */
  readonly recentRuns?: number;
  /**
   * Whether this node sends an installation job's minute refresh: true on one node per job (the
   * first-ranked), so the refreshes cost Redis the same however many nodes run the job. Every
   * node sends its instance jobs' (their rows are its own). Default: every job.
   */
  readonly refreshes?: (jobId: string) => boolean;
}

/** A batch sent and not yet acknowledged; resent as it is (same sequence number) until it is. */
interface Inflight {
  readonly seq: number;
  readonly batch: RecordBatch;
}

interface Slot {
  readonly jobId: string;
  readonly instanceScoped: boolean;
  /** What waits to be written; made with the first thing to write (most jobs have nothing). */
  pending: JobBatch | undefined;
  /**
   * When the job's fields were asked to be created and described (its registration or minute
   * refresh), ISO: the description is read from the runner as the batch is sent, so that ten
   * thousand jobs registered or refreshed at once do not hold ten thousand descriptions.
   */
  initAt: string | undefined;
  /** Whether that refresh also writes this node's view of the schedule's validity. */
  initCause: boolean;
  /**
   * A grid job's next tick as last planned (epoch ms, null: none), written with the job's next
   * batch: kept as a number, so a tick of many jobs makes neither a batch nor a text per job.
   */
  nextDueAt: number | null | undefined;
  inflight: Inflight | undefined;
  scheduleKey: string | undefined;
  state: string;
}

/** Writes a runner's outcomes to Redis; see the module comment. */
export class StatsWriter {
  /** This writer's id in the batches hashes: the instance id and a random nonce per start. */
  readonly writerId: string;
  /** What the writer has done so far. */
  readonly counts: WriterCounts = { applied: 0, duplicates: 0, failures: 0 };
  private readonly slots = new Map<string, Slot>();
  private readonly offs: Array<() => void> = [];
  private seq = 0;
  private readonly clock: Timers;
  private readonly runsCap: number;
  private timer: TimerHandle | undefined;
  private touching: Repeating | undefined;
  private cycling: Promise<void> | undefined;
  private failures = 0;
  private stopped = false;

  constructor(private readonly opts: StatsWriterOptions) {
    this.writerId = `${opts.core.instanceId}#${randomBytes(6).toString('hex')}`;
    this.clock = opts.clock ?? systemClock;
    this.runsCap = opts.recentRuns ?? RUNS_CAP;
    const core = opts.core;
    this.offs.push(
      core.on('runEnded', (e) => this.pending(e.jobId).addRun(e)),
      core.on('skipped', (e) => {
        // A claimed skip the claim script already counted is not written again.
        if (!e.recorded) this.pending(e.jobId).addSkip(e);
      }),
      core.on('missed', (e) => this.pending(e.jobId).addMissed(e.count)),
      core.on('scheduled', (e) => this.onScheduled(e.jobId, e.nextDueAt)),
      core.on('jobState', (e) => this.onJobState(e.jobId, e.state, e.cause)),
    );
  }

  /** Registers every job the runner has (fields created with zeros) and starts flushing. */
  start(): void {
    for (const view of this.opts.core.jobs()) this.slot(view.job.id);
    this.arm(0);
    this.touching = every(this.clock, TOUCH_MS, () => this.touch());
  }

  /** Number of jobs whose stats are not yet in Redis. */
  get backlog(): number {
    let n = 0;
    for (const s of this.slots.values()) if (hasWork(s)) n++;
    return n;
  }

  /** Writes what is pending now (and waits for it); resolves false if something is left. */
  async flush(): Promise<boolean> {
    // A round in progress may have started before the latest events: then one more.
    for (let round = 0; round < 3 && this.backlog > 0; round++) {
      const before = this.counts.failures;
      await this.cycle();
      if (this.counts.failures > before) break;
    }
    return this.backlog === 0;
  }

  /**
   * Stops listening and writes what is left, trying for at most `timeoutMs`.
   * @returns the number of jobs whose stats could not be written (and are lost).
   */
  async stop(timeoutMs: number): Promise<number> {
    this.stopped = true;
    for (const off of this.offs.splice(0)) off();
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.touching?.stop();
    const deadline = this.clock.monotonic() + timeoutMs;
    while (this.backlog > 0 && this.clock.monotonic() < deadline) {
      await waitAtMost(this.clock, this.cycle(), deadline - this.clock.monotonic(), true);
      if (this.backlog > 0 && this.failures > 0) await sleep(this.clock, Math.min(100, deadline - this.clock.monotonic()));
    }
    const left = this.backlog;
    if (left > 0) this.opts.logger.warn({ jobs: left }, 'stopping with stats of %d job(s) not written to Redis; they are lost', left);
    return left;
  }

  /** A job's pending batch, about to get something to write: the next write is armed. */
  private pending(jobId: string): JobBatch {
    this.wake();
    return batchOf(this.slot(jobId), this.runsCap);
  }

  /**
   * Arms the next write {@link FLUSH_MS} from now unless one is armed or going on (a round
   * re-arms itself when something is left): an idle node has no timer waking it.
   */
  private wake(): void {
    if (this.timer === undefined && this.cycling === undefined) this.arm(FLUSH_MS);
  }

  private slot(jobId: string): Slot {
    let s = this.slots.get(jobId);
    if (s) return s;
    const view = this.opts.core.job(jobId);
    const instanceScoped = (view?.job.scope ?? 'instance') === 'instance';
    s = { jobId, instanceScoped, pending: undefined, initAt: undefined, initCause: false, nextDueAt: undefined, inflight: undefined, scheduleKey: view?.schedule?.trigger.key, state: view?.state ?? 'ok' };
    this.slots.set(jobId, s);
    if (view) {
      s.initAt = iso(this.opts.core.now());
      this.wake();
    }
    this.opts.onNewJob?.(jobId);
    return s;
  }

  private onScheduled(jobId: string, nextDueAt: number | null): void {
    const s = this.slot(jobId);
    const trigger = this.opts.core.triggerOf(jobId);
    // A grid job's next tick is planned when a tick fires, so it goes with that run's write
    // (or the node that ran it writes it); only a fixedDelay's next due, planned after the
    // run's end, is written on its own.
    if (trigger !== undefined && trigger.kind !== 'fixedDelay') s.nextDueAt = nextDueAt;
    else {
      s.nextDueAt = undefined;
      batchOf(s, this.runsCap).setField('nextDueAt', iso(nextDueAt), true);
      this.wake();
    }
    if (trigger && trigger.key !== s.scheduleKey) {
      // A new schedule: "three scheduled fires without a success" counts from now.
      const pending = batchOf(s, this.runsCap);
      if (s.scheduleKey !== undefined) pending.setField('resumedAt', iso(this.opts.core.now()));
      s.scheduleKey = trigger.key;
      const view = this.opts.core.job(jobId);
      if (view) pending.describe(describeJob(view));
      this.wake();
    }
  }

  private onJobState(jobId: string, state: string, cause: string | undefined): void {
    this.wake();
    const s = this.slot(jobId);
    const pending = batchOf(s, this.runsCap);
    pending.setField('invalidCause', state === 'invalidSchedule' ? (cause ?? 'invalid schedule') : '');
    if (state === 'ok' && s.state !== 'ok') pending.setField('resumedAt', iso(this.opts.core.now()));
    s.state = state;
    const view = this.opts.core.job(jobId);
    if (view) pending.describe(describeJob(view));
  }

  /**
   * Every job's fields again: created if absent, description, and this node's view of the
   * schedule's validity (so a cause written by a node that is gone does not stay forever).
   * An installation job's are sent by the node that {@link StatsWriterOptions.refreshes} it.
   * Only marked here: each job's fields are read as its batch is sent ({@link initialize}).
   */
  private touch(): void {
    this.wake();
    const now = iso(this.opts.core.now());
    const refreshes = this.opts.refreshes;
    for (const view of this.opts.core.jobs()) {
      if (refreshes && view.job.scope === 'installation' && !refreshes(view.job.id)) continue;
      const s = this.slot(view.job.id);
      s.initAt = now;
      s.initCause = true;
    }
  }

  /**
   * The batch to send for a slot: what is pending, with the job's description (and, after a
   * refresh, its schedule's validity) as the runner has them now, when they were asked for.
   */
  private initialize(s: Slot): JobBatch {
    const batch = batchOf(s, this.runsCap);
    s.pending = undefined;
    if (s.nextDueAt !== undefined) batch.setField('nextDueAt', iso(s.nextDueAt), true, true);
    s.nextDueAt = undefined;
    const initAt = s.initAt;
    if (initAt === undefined) return batch;
    const view = this.opts.core.job(s.jobId);
    if (view) {
      batch.initialize(describeJob(view), initAt);
      if (s.initCause) batch.setField('invalidCause', view.state === 'invalidSchedule' ? (view.invalidCause ?? 'invalid schedule') : '');
    }
    s.initAt = undefined;
    s.initCause = false;
    return batch;
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = this.clock.setTimer(
      () => {
        this.timer = undefined;
        void this.cycle();
      },
      ms,
      true,
    );
  }

  /**
   * One round: every job with an unacknowledged or pending batch sends one batch. What is
   * left (events during the round, a failure) is written in the next round, armed here.
   */
  private cycle(): Promise<void> {
    this.cycling ??= this.runCycle().finally(() => {
      this.cycling = undefined;
      if (this.timer === undefined && this.backlog > 0) {
        this.arm(this.failures === 0 ? FLUSH_MS : Math.min(MAX_BACKOFF_MS, FLUSH_MS * 2 ** Math.min(this.failures, 8)));
      }
    });
    return this.cycling;
  }

  private async runCycle(): Promise<void> {
    if (this.opts.redis.status !== 'ready') {
      if (this.backlog > 0) this.failed(new Error(`Redis connection is ${this.opts.redis.status}`));
      return;
    }
    // Every few hundred ms: walked without allocating, as most jobs have nothing to write.
    const due: Slot[] = [];
    for (const s of this.slots.values()) if (hasWork(s)) due.push(s);
    // CHUNK jobs at a time, each chunk's batches made just before it is sent and the next one
    // only once Redis answered: a round over ten thousand jobs never holds them all in flight
    // (memory), and never holds the event loop (runs, lease watchers) for long.
    let sent = 0;
    const seenAt = iso(this.opts.core.now());
    for (let i = 0; i < due.length; i += CHUNK) {
      const chunk = due.slice(i, i + CHUNK).map((s) => {
        if (!s.inflight) {
          const batch = this.initialize(s);
          batch.setField('seenAt', seenAt, true);
          s.inflight = { seq: ++this.seq, batch: batch.toRecord(this.opts.core.instanceId) };
        }
        return { jobId: s.jobId, s, inflight: s.inflight };
      });
      try {
        await this.send(chunk);
      } catch (err) {
        // Redis is in trouble: the rest waits for the next round (with backoff).
        this.failed(err);
        return;
      }
      sent++;
    }
    if (sent > 0) this.recovered();
  }

  /** Sends batches in one pipeline; rejects with the first error, after settling the rest. */
  private async send(chunk: Array<{ jobId: string; s: Slot; inflight: Inflight }>): Promise<void> {
    const k = this.opts.keys;
    const results = await recordScript(
      this.opts.redis,
      chunk.map(({ jobId, inflight }) => ({
        statsKey: k.stats(jobId),
        instancesKey: k.instanceStats(jobId),
        runsKey: k.runs(jobId),
        batchesKey: k.batches(jobId),
        writer: this.writerId,
        seq: inflight.seq,
        batch: inflight.batch,
      })),
      { runsCap: this.runsCap, keepMs: BATCHES_KEEP_MS },
    );
    let error: Error | undefined;
    results.forEach((r, i) => {
      const item = chunk[i];
      if (!item) return;
      if (r instanceof Error) {
        error ??= r;
        return;
      }
      // Applied now, or by an earlier attempt whose reply was lost: either way it is in.
      if (r) this.counts.applied++;
      else this.counts.duplicates++;
      if (item.s.inflight === item.inflight) item.s.inflight = undefined;
    });
    if (error) throw error;
  }

  private failed(err: unknown): void {
    this.counts.failures++;
    if (this.failures === 0) {
      const message = errorMessage(err);
      this.opts.logger.warn({ error: message, jobs: this.backlog }, 'stats cannot be written to Redis (%s); keeping them in memory and retrying', message);
    }
    this.failures++;
  }

  private recovered(): void {
    if (this.failures > 0) this.opts.logger.info({ attempts: this.failures }, 'stats are written to Redis again');
    this.failures = 0;
  }
}

/** Whether a slot has something to send: an unacknowledged batch, fields to create, or pending stats. */
function hasWork(s: Slot): boolean {
  return s.inflight !== undefined || s.initAt !== undefined || (s.pending !== undefined && !s.pending.isEmpty);
}

/** A slot's pending batch, made when it first gets something. */
function batchOf(s: Slot, runsCap: number): JobBatch {
  s.pending ??= new JobBatch(s.instanceScoped, runsCap);
  return s.pending;
}
