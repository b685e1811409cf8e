/**
 * When the stats writer writes: a round {@link FLUSH_MS} after something became pending and at
 * most that often, one round at a time, with nothing armed while nothing is pending; after a
 * failed round the next waits longer (backoff, up to {@link MAX_BACKOFF_MS}). The first failure
 * and the recovery are logged, not every repeat.
 * @module
 */
import type { Logger } from '../logger.js';
import { errorMessage } from '../errors.js';
import type { TimerHandle, Timers } from '../clock.js';

/** Pause between two writes of a job's batch, in ms. */
export const FLUSH_MS = 300;
/** Longest wait between two attempts while Redis fails, in ms. */
export const MAX_BACKOFF_MS = 2_000;

/** What the writer has done, for tests and diagnostics. */
export interface WriterCounts {
  /** Batches Redis applied. */
  applied: number;
  /** Batches Redis had applied before (a retry after a lost reply). */
  duplicates: number;
  /** Failed attempts. */
  failures: number;
  /** Batches dropped: Redis answered each with its own error (a key of the wrong type) at every try. */
  dropped: number;
}

/** The writer's rounds: see the module comment. */
export class FlushTimer {
  /** Failed rounds since the last that wrote (0 while Redis takes the writes). */
  failures = 0;
  private timer: TimerHandle | undefined;
  private cycling: Promise<void> | undefined;
  private stopped = false;

  /**
   * @param round - writes what is due; reports through {@link failed} and {@link recovered}.
   * @param backlog - how many jobs have something to write.
   */
  constructor(
    private readonly clock: Timers,
    private readonly logger: Logger,
    private readonly counts: WriterCounts,
    private readonly round: () => Promise<void>,
    private readonly backlog: () => number,
  ) {}

  /**
   * Arms the next write {@link FLUSH_MS} from now unless one is armed or going on (a round
   * re-arms itself when something is left): an idle node has no timer waking it.
   */
  wake(): void {
    if (this.timer === undefined && this.cycling === undefined) this.arm(FLUSH_MS);
  }

  /** Arms a round `ms` from now (none once stopped). */
  arm(ms: number): void {
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
   * One round now, or the one going on. What is left after it (events during the round, a
   * failure) is written in the next round, armed here.
   */
  cycle(): Promise<void> {
    this.cycling ??= this.round().finally(() => {
      this.cycling = undefined;
      if (this.timer === undefined && this.backlog() > 0) {
        this.arm(this.failures === 0 ? FLUSH_MS : Math.min(MAX_BACKOFF_MS, FLUSH_MS * 2 ** Math.min(this.failures, 8)));
      }
    });
    return this.cycling;
  }

  /**
   * Redis answers again: what failed is written now, not after the backoff, so a run that
   * ended during the outage reaches Redis before another node's claim can find it lost.
   */
  reconnected(): void {
    if (this.failures > 0 && this.cycling === undefined) this.arm(0);
  }

  /** Arms nothing more; a round going on ends as it would. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
  }

  /** A round failed: what is left waits for the next, with backoff. */
  failed(err: unknown): void {
    this.counts.failures++;
    if (this.failures === 0) {
      const message = errorMessage(err);
      this.logger.warn({ error: message, jobs: this.backlog() }, 'stats cannot be written to Redis (%s); keeping them in memory and retrying', message);
    }
    this.failures++;
  }

  /** A round wrote. */
  recovered(): void {
    if (this.failures > 0) this.logger.info({ attempts: this.failures }, 'stats are written to Redis again');
    this.failures = 0;
  }
}
