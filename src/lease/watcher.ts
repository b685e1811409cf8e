/**
 * Keeps a claimed lease alive while its run goes on, and says so the moment
 * the lease can no longer be trusted: the key is gone or someone else's, an
 * extension failed, Redis did not answer before the lease would have run
 * out, or this process was too busy to extend in time.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import type { Lease } from './lease.js';
import { MAX_TIMER_MS } from '../runner/clock.js';


/** Options for {@link watchLease}. */
export interface WatchLeaseOptions {
  /** Lease time to live, ms; the lease is extended every half of it. */
  leaseMs: number;
  /**
   * Called once when the lease is lost, with a reason for people and, when
   * an error caused it, that error. Not called after `stop()`. Must not throw.
   */
  onLost(reason: string, cause?: unknown): void;
  /**
   * Monotonic ms clock, default `performance.now()`. Must be the clock of
   * the lease store that made the lease (deadlines are passed to it).
   */
  monotonicNow?: () => number;
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
  const { leaseMs, onLost } = options;
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 2) {
    throw new LeaseholdError(ErrorCodes.INVALID_CONFIG, `leaseMs of job ${lease.jobId} must be an integer >= 2 (ms), got ${String(leaseMs)}`);
  }
  const now = options.monotonicNow ?? (() => performance.now());
  const interval = Math.max(1, Math.floor(leaseMs / 2));
  let lastSentAt = options.claimedAt ?? lease.claimedAt;
  let deadline = lastSentAt + leaseMs;
  let stopped = false;
  let lost = false;
  let timer: NodeJS.Timeout | undefined;

  const lose = (reason: string, cause?: unknown): void => {
    if (stopped || lost) return;
    lost = true;
    clearTimeout(timer);
    timer = undefined;
    onLost(reason, cause);
  };

  const schedule = (): void => {
    const wait = Math.min(Math.max(0, lastSentAt + interval - now()), MAX_TIMER_MS);
    timer = setTimeout(() => void wake(), wait);
    timer.unref();
  };

  const wake = async (): Promise<void> => {
    timer = undefined;
    if (stopped || lost) return;
    const sentAt = now();
    if (sentAt >= deadline) {
      lose(`the watcher woke ${Math.round(sentAt - deadline)}ms after the lease deadline (event loop blocked?); the lease may have expired`);
      return;
    }
    if (sentAt < lastSentAt + interval) {
      schedule();
      return;
    }
    let extended: boolean;
    try {
      extended = await lease.extend(leaseMs, deadline);
    } catch (err) {
      lose(`extending the lease failed: ${errorMessage(err)}`, err);
      return;
    }
    if (stopped || lost) return;
    if (!extended) {
      lose(now() >= deadline
        ? `Redis did not confirm an extension within the lease time (${leaseMs}ms)`
        : 'the lease is gone or held by another instance');
      return;
    }
    lastSentAt = sentAt;
    deadline = sentAt + leaseMs;
    schedule();
  };

  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
    get lost() {
      return lost;
    },
    check() {
      const at = now();
      if (at >= deadline) lose(`the lease deadline passed ${Math.round(at - deadline)}ms ago without an extension (event loop blocked?); the lease may have expired`);
    },
  };
}
