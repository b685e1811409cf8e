/**
 * Sending the stats writer's batches through `record.lua`, {@link CHUNK} jobs at a time: each
 * chunk's batches are made just before it is sent, and the next chunk goes only once Redis
 * answered, so a round over ten thousand jobs never holds them all in flight (memory) and never
 * holds the event loop (runs, lease watchers) for long. A job's batch keeps its sequence number
 * until Redis acknowledges it, so a batch resent after a lost reply counts once. A batch that
 * Redis answers with its own error (a key of the wrong type, a counter that holds no integer)
 * changed nothing and never will: it is dropped after {@link MAX_TRIES} tries, and the other
 * jobs' batches go on.
 * @module
 */
import { LeaseholdError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { recordScript } from '../redis/stats-scripts.js';
import type { JobBatch, StreakChange } from './batch.js';
import type { WriterCounts } from './flush.js';
import type { Inflight, PendingJob } from './pending.js';

/** Batches sent in one pipeline. */
const CHUNK = 200;
/** Tries of a batch that Redis answers with its own error, after which it is dropped. */
export const MAX_TRIES = 5;
/** How long the writers hash of a job outlives its last batch, in ms. */
const BATCHES_KEEP_MS = 7 * 24 * 3_600_000;

/** Options of {@link BatchSender}. */
export interface BatchSenderOptions {
  /** A `stats` connection. */
  readonly redis: RedisClient;
  readonly keys: Keys;
  /** The writer's id in the writers hashes. */
  readonly writerId: string;
  /** This node's instance id, for per-instance rows. */
  readonly instanceId: string;
  /** How many recent runs each job keeps. */
  readonly runsCap: number;
  readonly counts: WriterCounts;
  /** Told when a batch applied now starts or ends an installation job's failing streak. */
  readonly onStreak?: ((change: StreakChange) => void) | undefined;
  /** A job's batch was dropped: it failed {@link MAX_TRIES} times with its own error, the last `error`. */
  readonly onDropped: (jobId: string, batch: Inflight['batch'], error: LeaseholdError) => void;
  /** A job's batch was applied (or found applied before). */
  readonly onApplied: (jobId: string) => void;
}

/** Sends jobs' batches; see the module comment. */
export class BatchSender {
  private seq = 0;

  constructor(private readonly opts: BatchSenderOptions) {}

  /**
   * Sends one batch per job: its unacknowledged one, or a new one made by `take`. Stops at the
   * first chunk Redis refuses or fails.
   * @returns how many chunks were written, and whether (and why) a chunk failed.
   */
  async sendAll(due: readonly PendingJob[], take: (job: PendingJob) => JobBatch): Promise<{ sent: number; failed: boolean; error: unknown }> {
    let sent = 0;
    for (let i = 0; i < due.length; i += CHUNK) {
      const chunk = due.slice(i, i + CHUNK).map((job) => {
        if (!job.inflight) {
          const batch = take(job);
          job.inflight = { seq: ++this.seq, batch: batch.toRecord(this.opts.instanceId), streak: batch.streak, tries: 0 };
        }
        return { job, inflight: job.inflight };
      });
      try {
        await this.send(chunk);
      } catch (error) {
        return { sent, failed: true, error };
      }
      sent++;
    }
    return { sent, failed: false, error: undefined };
  }

  /**
   * Sends batches in one pipeline; rejects with the first error of a call (Redis failing), after
   * settling the rest. A batch's own error (a LeaseholdError) counts a try of it alone.
   */
  private async send(chunk: ReadonlyArray<{ job: PendingJob; inflight: Inflight }>): Promise<void> {
    const { keys: k, counts } = this.opts;
    const results = await recordScript(
      this.opts.redis,
      chunk.map(({ job, inflight }) => ({
        statsKey: k.stats(job.jobId),
        instancesKey: k.instanceStats(job.jobId),
        runsKey: k.runs(job.jobId),
        stateKey: k.state(job.jobId),
        writersKey: k.writers(job.jobId),
        leaseKey: k.lease(job.jobId),
        writer: this.opts.writerId,
        seq: inflight.seq,
        batch: inflight.batch,
      })),
      { runsCap: this.opts.runsCap, keepMs: BATCHES_KEEP_MS },
    );
    let error: Error | undefined;
    results.forEach((r, i) => {
      const item = chunk[i];
      if (!item) return;
      if (r instanceof LeaseholdError) {
        // Nothing of it was written: tried again with the next round, and dropped at last.
        if (++item.inflight.tries < MAX_TRIES) return;
        counts.dropped++;
        if (item.job.inflight === item.inflight) item.job.inflight = undefined;
        this.opts.onDropped(item.job.jobId, item.inflight.batch, r);
        return;
      }
      if (r instanceof Error) {
        error ??= r;
        return;
      }
      // Applied now, or by an earlier attempt whose reply was lost: either way it is in.
      if (r.applied) counts.applied++;
      else counts.duplicates++;
      if (r.streakBefore !== null && item.inflight.streak) {
        for (const change of item.inflight.streak.changes(r.streakBefore)) this.opts.onStreak?.(change);
      }
      if (item.job.inflight === item.inflight) item.job.inflight = undefined;
      this.opts.onApplied(item.job.jobId);
    });
    if (error) throw error;
  }
}
