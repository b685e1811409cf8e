/**
 * Keeps a claimed lease alive while its run goes on, and says so the moment
 * the lease can no longer be trusted: the key is gone or someone else's, an
 * extension failed, Redis did not answer before the lease would have run
 * out, or this process was too busy to extend in time.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import type { Lease } from './lease.js';
import type { LeaseLoss, LeaseLossCause } from './port.js';
import { MAX_TIMER_MS, systemClock, type TimerHandle, type Timers } from '../clock.js';


/** Options for {@link watchLease}. */
export interface WatchLeaseOptions {
  /** Lease time to live, ms; the lease is extended every half of it. */
  leaseMs: number;
  /**
   * Called once when the lease is lost, with its cause and a sentence for people (which
   * names the error, when one caused it). Not called after `stop()`. Must not throw.
   */
  onLost(loss: LeaseLoss): void;
  /**
   * The clock: its monotonic ms for deadlines (it must be the clock of the lease store
   * that made the lease, since deadlines are passed to it) and its timers. Default the system's.
   */
  clock?: Timers;
  /** When the claim was sent, on that clock; default `lease.claimedAt`. */
  claimedAt?: number;
}

/** A running watch; see {@link watchLease}. */
export interface LeaseWatch {
  /** Stop extending. Safe to call more than once; `onLost` is not called after it. */
  stop(): void;
  /** True once the lease was found lost. */
  readonly lost: boolean;
  /**
   * Reports the loss now if the deadline has passed without a confirmed extension (the
   * event loop may have been blocked so long that no timer could run). Call it before
   * trusting a run that just ended.
   */
  check(): void;
}

/**
 * Extend `lease` every `leaseMs / 2` until `stop()`. The deadline is the
 * send time of the last successful extension (first: of the claim) plus
 * `leaseMs`: Redis counts the lease from a moment no earlier than that, so
 * before the deadline the lease is surely still ours. An extension that
 * finds the lease gone or someone else's, that throws, or that has no answer
 * by the deadline calls `onLost`; so does a timer that wakes only after the
 * deadline (the event loop was blocked). Timers are unref'd: a watch never
 * keeps the process alive on its own.
 */
export function watchLease(lease: Lease, options: WatchLeaseOptions): LeaseWatch {
  const { leaseMs } = options;
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 2) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `leaseMs of job ${lease.jobId} must be an integer >= 2 (ms), got ${String(leaseMs)}`);
  }
  return new Watch(lease, options);
}

/** A running watch: one object per run, with its state in fields (see {@link watchLease}). */
class Watch implements LeaseWatch {
  private readonly leaseMs: number;
  private readonly onLost: WatchLeaseOptions['onLost'];
  private readonly clock: Timers;
  private readonly interval: number;
  private lastSentAt: number;
  private deadline: number;
  private stopped = false;
  private isLost = false;
  private timer: TimerHandle | undefined;

  constructor(
    private readonly lease: Lease,
    options: WatchLeaseOptions,
  ) {
    this.leaseMs = options.leaseMs;
    this.onLost = options.onLost;
    this.clock = options.clock ?? systemClock;
    this.interval = Math.max(1, Math.floor(this.leaseMs / 2));
    this.lastSentAt = options.claimedAt ?? lease.claimedAt;
    this.deadline = this.lastSentAt + this.leaseMs;
    this.schedule();
  }

  get lost(): boolean {
    return this.isLost;
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
  }

  check(): void {
    const at = this.clock.monotonic();
    if (at >= this.deadline) this.lose('loopBlocked', `the lease deadline passed ${Math.round(at - this.deadline)}ms ago without an extension (event loop blocked?); the lease may have expired`);
  }

  async wake(): Promise<void> {
    this.timer = undefined;
    if (this.stopped || this.isLost) return;
    const sentAt = this.clock.monotonic();
    if (sentAt >= this.deadline) {
      this.lose('loopBlocked', `the watcher woke ${Math.round(sentAt - this.deadline)}ms after the lease deadline (event loop blocked?); the lease may have expired`);
      return;
    }
    if (sentAt < this.lastSentAt + this.interval) {
      this.schedule();
      return;
    }
    let extended: boolean;
    try {
      extended = await this.lease.extend(this.leaseMs, this.deadline);
    } catch (err) {
      this.lose('redisFailed', `extending the lease failed: ${errorMessage(err)}`, err);
      return;
    }
    if (this.stopped || this.isLost) return;
    if (!extended) {
      if (this.clock.monotonic() >= this.deadline) this.lose('redisStalled', `Redis did not confirm an extension within the lease time (${this.leaseMs}ms)`);
      else this.lose('gone', 'the lease is gone or held by another instance');
      return;
    }
    this.lastSentAt = sentAt;
    this.deadline = sentAt + this.leaseMs;
    this.schedule();
  }

  private lose(cause: LeaseLossCause, message: string, error?: unknown): void {
    if (this.stopped || this.isLost) return;
    this.isLost = true;
    this.clearTimer();
    this.onLost(error === undefined ? { cause, message } : { cause, message, error });
  }

  private schedule(): void {
    const wait = Math.min(Math.max(0, this.lastSentAt + this.interval - this.clock.monotonic()), MAX_TIMER_MS);
    this.timer = this.clock.setTimer(() => void this.wake(), wait, true);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
  }
}
