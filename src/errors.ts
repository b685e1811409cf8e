/**
 * The one error class leasehold throws, with a stable `code` per kind of failure.
 * @module
 */

/**
 * Every code a {@link LeaseholdError} can carry. Codes are stable: each names one
 * kind of failure and is never reused for another.
 */
export const ErrorCodes = {
  /** A cron expression is malformed; the message names the field. */
  INVALID_CRON: 'INVALID_CRON',
  /** A zone is neither an IANA id, a fixed offset nor `UTC`. */
  INVALID_ZONE: 'INVALID_ZONE',
  /** A duration is not a positive number of ms nor a string like `10s`. */
  INVALID_DURATION: 'INVALID_DURATION',
  /** A job definition is wrong; the message names the job and the field. */
  INVALID_JOB: 'INVALID_JOB',
  /** Two jobs share an id. */
  DUPLICATE_JOB: 'DUPLICATE_JOB',
  /** A runner option or environment variable is wrong. */
  INVALID_CONFIG: 'INVALID_CONFIG',
  /** A jobs module could not be loaded or exports no array. */
  INVALID_MODULE: 'INVALID_MODULE',
  /** The runner was used in a state that does not allow the call. */
  INVALID_STATE: 'INVALID_STATE',
  /** A run exceeded its timeout (an abort reason). */
  TIMEOUT: 'timeout',
  /** A run's lease was lost (an abort reason). */
  LOCK_LOST: 'lockLost',
  /** The node is shutting down (an abort reason). */
  SHUTDOWN: 'shutdown',
  /** The run was cancelled by an operator (an abort reason). */
  CANCELLED: 'cancelled',
  /** Redis refused a command or did not answer in time. */
  REDIS_ERROR: 'REDIS_ERROR',
  /** A job id that no runner knows. */
  UNKNOWN_JOB: 'UNKNOWN_JOB',
} as const;

/** A stable error code; see {@link ErrorCodes}. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** The reasons a run's `AbortSignal` can carry. */
export type AbortReasonCode = 'timeout' | 'lockLost' | 'shutdown' | 'cancelled';

/**
 * The only error class leasehold throws. `code` is stable; `message` names the
 * input and the field at fault.
 */
export class LeaseholdError extends Error {
  /** What kind of failure this is. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LeaseholdError';
    this.code = code;
  }
}

/** True when `err` is a {@link LeaseholdError}, optionally with the given code. */
export function isLeaseholdError(err: unknown, code?: ErrorCode): err is LeaseholdError {
  return err instanceof LeaseholdError && (code === undefined || err.code === code);
}

/** The message of a thrown value, whatever was thrown (for logs and outcomes). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
