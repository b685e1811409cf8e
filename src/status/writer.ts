/**
 * The stats writer: a listener of the runner's events that merges outcomes, skips and
 * missed ticks per job (`pending.ts`) and writes them through `record.lua`, many jobs'
 * batches per call (`send.ts`), 300 ms after something became pending and at most that often
 * (`flush.ts`); with nothing pending no timer is armed. While Redis is away the
 * batches stay in memory (merged, so bounded by the number of jobs) and are retried with
 * backoff; a batch is retried with the same sequence number until Redis acknowledges it, so it
 * never counts twice. A batch Redis answers with its own error (a key of the job of the wrong
 * type) was not written and never will be: it is dropped after a few tries, said once per job
 * (until one of the job's batches applies again) and counted per job ({@link StatsWriter.dropped}).
 * Every minute each job's fields are refreshed (created if absent, `seenAt`).
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import type { Keys } from '../redis/keys.js';
import { iso, type StreakChange } from './batch.js';
import { DEFAULT_RECENT_RUNS } from '../redis/record.js';
import { FlushTimer, type WriterCounts } from './flush.js';
import { PendingJobs, type WriterCore } from './pending.js';
import { BatchSender, MAX_TRIES } from './send.js';
import type { RecordBatch } from '../redis/record.js';
import { errorMessage, type LeaseholdError } from '../errors.js';
import { every, sleep, systemClock, waitAtMost, type Repeating, type Timers } from '../clock.js';

export type { WriterCore } from './pending.js';
export type { WriterCounts } from './flush.js';

/** Every job's fields are refreshed (created if absent, `seenAt`) this often, in ms. */
const TOUCH_MS = 60_000;

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
  /** How many recent runs each job keeps; default {@link DEFAULT_RECENT_RUNS}. */
  readonly recentRuns?: number;
  /**
   * Whether this node sends an installation job's minute refresh: true on one node per job (the
   * first-ranked), so the refreshes cost Redis the same however many nodes run the job. Every
   * node sends its instance jobs' (their rows are its own). Default: every job.
   */
  readonly refreshes?: (jobId: string) => boolean;
  /**
   * Told when a batch this writer applied starts or ends an installation job's failing streak
   * (the cluster's, read by the same script that applied it), so each is logged once.
   */
  readonly onStreak?: ((change: StreakChange) => void) | undefined;
}

/** Writes a runner's outcomes to Redis; see the module comment. */
export class StatsWriter {
  /** This writer's id in the writers hashes: the instance id and a random nonce per start. */
  readonly writerId: string;
  /** What the writer has done so far. */
  readonly counts: WriterCounts = { applied: 0, duplicates: 0, failures: 0, dropped: 0 };
  /** Batches dropped so far, by job: Redis refused each at every try (a key of the wrong type). */
  readonly dropped = new Map<string, number>();
  /** Jobs whose dropped batch was said, and no batch applied since. */
  private readonly dropping = new Set<string>();
  private readonly jobs: PendingJobs;
  private readonly flushing: FlushTimer;
  private readonly sender: BatchSender;
  private readonly offs: Array<() => void> = [];
  private readonly clock: Timers;
  private touching: Repeating | undefined;

  constructor(private readonly opts: StatsWriterOptions) {
    const core = opts.core;
    this.writerId = `${core.instanceId}#${randomBytes(6).toString('hex')}`;
    this.clock = opts.clock ?? systemClock;
    const runsCap = opts.recentRuns ?? DEFAULT_RECENT_RUNS;
    this.jobs = new PendingJobs(core, runsCap, () => this.flushing.wake(), opts.onNewJob);
    this.flushing = new FlushTimer(this.clock, opts.logger, this.counts, () => this.round(), () => this.jobs.backlog);
    const onStreak = opts.onStreak;
    this.sender = new BatchSender({
      redis: opts.redis, keys: opts.keys, writerId: this.writerId, instanceId: core.instanceId, runsCap, counts: this.counts,
      onStreak: onStreak
        ? (change) => {
            try {
              onStreak(change);
            } catch (err) {
              opts.logger.error({ err, jobId: change.run.jobId }, 'a listener of a failing streak threw');
            }
          }
        : undefined,
      onDropped: (jobId, batch, error) => this.droppedBatch(jobId, batch, error),
      onApplied: (jobId) => {
        if (this.dropping.delete(jobId)) opts.logger.info({ jobId }, 'the stats of job "%s" are written to Redis again', jobId);
      },
    });
    this.offs.push(
      core.on('runEnded', (e) => {
        // A lost run the claim script recorded is not written again.
        if (!e.recorded) this.jobs.batch(e.jobId).addRun(e);
      }),
      core.on('skipped', (e) => {
        // A claimed skip the claim script already counted is not written again.
        if (!e.recorded) this.jobs.batch(e.jobId).addSkip(e);
      }),
      core.on('missed', (e) => this.jobs.batch(e.jobId).addMissed(e.count)),
      core.on('scheduled', (e) => this.jobs.scheduled(e.jobId, e.nextDueAt)),
      core.on('jobState', (e) => this.jobs.stateChanged(e.jobId, e.state, e.cause)),
    );
  }

  /** Registers every job the runner has (fields created with zeros) and starts flushing. */
  start(): void {
    const now = iso(this.opts.core.now());
    for (const view of this.opts.core.jobs()) this.jobs.get(view.job.id, now, view);
    this.flushing.arm(0);
    const { redis } = this.opts;
    const onReady = (): void => this.flushing.reconnected();
    redis.on('ready', onReady);
    this.offs.push(() => redis.off('ready', onReady));
    this.touching = every(this.clock, TOUCH_MS, () => this.jobs.refresh(this.opts.refreshes));
  }

  /** Number of jobs whose stats are not yet in Redis. */
  get backlog(): number {
    return this.jobs.backlog;
  }

  /** Writes what is pending now (and waits for it); resolves false if something is left. */
  async flush(): Promise<boolean> {
    // A round in progress may have started before the latest events: then one more.
    for (let round = 0; round < 3 && this.backlog > 0; round++) {
      const before = this.counts.failures;
      await this.flushing.cycle();
      if (this.counts.failures > before) break;
    }
    return this.backlog === 0;
  }

  /**
   * Stops listening and writes what is left, trying for at most `timeoutMs`.
   * @returns the number of jobs whose stats could not be written (and are lost).
   */
  async stop(timeoutMs: number): Promise<number> {
    this.flushing.stop();
    for (const off of this.offs.splice(0)) off();
    this.touching?.stop();
    const deadline = this.clock.monotonic() + timeoutMs;
    while (this.backlog > 0 && this.clock.monotonic() < deadline) {
      await waitAtMost(this.clock, this.flushing.cycle(), deadline - this.clock.monotonic(), true);
      if (this.backlog > 0 && this.flushing.failures > 0) await sleep(this.clock, Math.min(100, deadline - this.clock.monotonic()));
    }
    const left = this.backlog;
    if (left > 0) {
      const runs = this.jobs.unwrittenRuns;
      if (this.jobs.unwrittenCounts) {
        this.opts.logger.warn({ jobs: left, unwrittenRuns: runs }, 'stopping with the stats of %d run(s) of %d job(s) that Redis did not acknowledge; they are lost unless Redis received them before it stopped answering', runs, left);
      } else {
        // Only fields a writer sets again (next due time, last seen): no run and no count is lost.
        this.opts.logger.debug({ jobs: left, unwrittenRuns: 0 }, 'stopping without writing the schedule fields of %d job(s): Redis did not acknowledge them; no run or count is lost', left);
      }
    }
    return left;
  }

  /** A batch Redis refused at every try: counted, and said once until the job's stats are written again. */
  private droppedBatch(jobId: string, batch: RecordBatch, error: LeaseholdError): void {
    this.dropped.set(jobId, (this.dropped.get(jobId) ?? 0) + 1);
    if (this.dropping.has(jobId)) return;
    this.dropping.add(jobId);
    const runs = batch.incr?.['runs'] ?? 0;
    const message = errorMessage(error);
    this.opts.logger.warn(
      { jobId, error: message, code: error.code, runs, tries: MAX_TRIES },
      'the stats of job "%s" cannot be written to Redis (%s); a batch of %d run(s) was dropped after %d tries, and later ones are dropped alike until it is repaired',
      jobId, message, runs, MAX_TRIES,
    );
  }

  /** One round: every job with an unacknowledged or pending batch sends one batch. */
  private async round(): Promise<void> {
    if (this.opts.redis.status !== 'ready') {
      if (this.backlog > 0) this.flushing.failed(new Error(`Redis connection is ${this.opts.redis.status}`));
      return;
    }
    const seenAt = iso(this.opts.core.now());
    const { sent, failed, error } = await this.sender.sendAll(this.jobs.due(), (job) => this.jobs.take(job, seenAt));
    // Redis is in trouble: the rest waits for the next round (with backoff).
    if (failed) this.flushing.failed(error);
    else if (sent > 0) this.flushing.recovered();
  }
}
