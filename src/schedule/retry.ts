/**
 * Retries of a failed run on the same tick: a job's `retry` option checked into a policy,
 * and the wait before each new attempt. Pure.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { describe, readDuration, type Duration } from './duration.js';

/**
 * How a failed run is retried on the same tick (under the same lease for an installation
 * job), never past the job's next tick or its timeout.
 * @typeParam D - The type of a duration: a {@link Duration}, or any string where a plain object's was widened.
 */
export interface RetryOptions<D extends string | number = Duration> {
  /** Attempts in all, the first included (2 or more to retry at all; at most 100). */
  readonly attempts: number;
  /**
   * The wait before each new attempt: a duration (the same every time), or an exponential
   * backoff `{ initial, max, factor }` (default factor 2, max 1h) with jitter: each wait is
   * drawn between half and all of `initial × factor^(attempt − 1)`, capped at `max`.
   * Default `1s`.
   */
  readonly backoff?: D | { readonly initial: D; readonly max?: D; readonly factor?: number };
}

/** A checked {@link RetryOptions}, in milliseconds. */
export interface RetryPolicy {
  readonly attempts: number;
  readonly initialMs: number;
  readonly maxMs: number;
  readonly factor: number;
  readonly jitter: boolean;
}

const MAX_ATTEMPTS = 100;
const DEFAULT_BACKOFF_MS = 1_000;
const DEFAULT_MAX_MS = 3_600_000;

/**
 * Checks a job's `retry` option.
 * @throws LeaseholdError `invalidJob`-kind errors naming what is wrong (the caller names the job and field).
 */
export function parseRetry(value: unknown): RetryPolicy {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `${describe(value)} must be an object { attempts, backoff }`);
  }
  const { attempts, backoff, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new LeaseholdError(ErrorCodes.invalidJob, `unknown field ${JSON.stringify(unknown[0])} (known: attempts, backoff)`);
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1 || attempts > MAX_ATTEMPTS) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `attempts: ${describe(attempts)} must be a whole number from 1 to ${MAX_ATTEMPTS} (the first attempt included)`);
  }
  if (backoff === undefined) return { attempts, initialMs: DEFAULT_BACKOFF_MS, maxMs: DEFAULT_BACKOFF_MS, factor: 1, jitter: false };
  if (typeof backoff === 'number' || typeof backoff === 'string') {
    const ms = readDuration(backoff, 'backoff', true);
    return { attempts, initialMs: ms, maxMs: ms, factor: 1, jitter: false };
  }
  if (typeof backoff !== 'object' || backoff === null || Array.isArray(backoff)) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `backoff: ${describe(backoff)} must be a duration or { initial, max, factor }`);
  }
  const { initial, max, factor, ...more } = backoff as Record<string, unknown>;
  const extra = Object.keys(more);
  if (extra.length > 0) throw new LeaseholdError(ErrorCodes.invalidJob, `backoff: unknown field ${JSON.stringify(extra[0])} (known: initial, max, factor)`);
  const initialMs = readDuration(initial, 'backoff.initial');
  const maxMs = max === undefined ? Math.max(initialMs, DEFAULT_MAX_MS) : readDuration(max, 'backoff.max');
  if (maxMs < initialMs) throw new LeaseholdError(ErrorCodes.invalidJob, `backoff.max (${describe(max)}) must not be less than backoff.initial (${describe(initial)})`);
  const f = factor ?? 2;
  if (typeof f !== 'number' || !Number.isFinite(f) || f < 1 || f > 100) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `backoff.factor: ${describe(factor)} must be a number from 1 to 100`);
  }
  return { attempts, initialMs, maxMs, factor: f, jitter: true };
}

/**
 * The wait after failed attempt number `attempt` (1 for the first), ms. `random` gives a
 * number in [0, 1) for the jitter.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, attempt - 1));
  return Math.round(policy.jitter ? base / 2 + (random() * base) / 2 : base);
}
