/**
 * The one error class leasehold throws, with a stable `code` per kind of failure.
 *
 * Every code is a camelCase string, the casing of the run outcomes and abort reasons a user
 * already reads (`lockLost`, `timedOut`), and each key of {@link ErrorCodes} is spelled
 * exactly as its value (`ErrorCodes.invalidCron === 'invalidCron'`): the name in the code, in
 * `err.code`, in a log line and in the README's error table is one string, and a search for
 * it finds every place. The abort reasons are a subset of the codes, taken from
 * {@link ErrorCodes} rather than written out again.
 * @module
 */

/**
 * Every code a {@link LeaseholdError} can carry. Codes are stable: each names one kind of
 * failure and is never reused for another. Each entry's comment is its meaning in the
 * README's error table, which also says what to do about it.
 */
export const ErrorCodes = {
  /** A cron expression is malformed; the message names the field at fault. */
  invalidCron: 'invalidCron',
  /** A zone is neither an IANA zone id, a fixed offset like `+02:00`, nor `UTC`. */
  invalidZone: 'invalidZone',
  /** A duration is neither a number of milliseconds nor a string like `10s`, or is out of range. */
  invalidDuration: 'invalidDuration',
  /** A job definition is wrong; the message names the job and the field. */
  invalidJob: 'invalidJob',
  /** Two jobs share an id. */
  duplicateJob: 'duplicateJob',
  /** A runner option, flag or environment variable is wrong, or the node cannot start with it. */
  invalidConfig: 'invalidConfig',
  /** A jobs module could not be loaded or does not export an array of jobs. */
  invalidModule: 'invalidModule',
  /** A call that the state of the runner (or of the object called) does not allow. */
  invalidState: 'invalidState',
  /** A run outlived its timeout (an abort reason). */
  timeout: 'timeout',
  /** A run's lease could not be extended or was taken, so another node may run the job (an abort reason). */
  lockLost: 'lockLost',
  /** The node is shutting down and the shutdown grace has passed (an abort reason). */
  shutdown: 'shutdown',
  /** An operator cancelled the run (an abort reason). */
  cancelled: 'cancelled',
  /** Redis refused a command, failed, or did not answer in time. */
  redisError: 'redisError',
  /** A task definition, a submission or an executor's configuration is wrong; the message names the task or executor and the field. */
  invalidTask: 'invalidTask',
  /** A task was submitted to an executor whose queue is at its limit. */
  queueFull: 'queueFull',
  /** A task ran on a node (or in a worker thread) where no task of that id is registered or exported. */
  unknownTask: 'unknownTask',
} as const;

/** A stable error code; see {@link ErrorCodes}. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** The codes a run's `AbortSignal` reason can carry: a subset of {@link ErrorCodes}. */
export const AbortReasonCodes = [ErrorCodes.timeout, ErrorCodes.lockLost, ErrorCodes.shutdown, ErrorCodes.cancelled] as const satisfies readonly ErrorCode[];

/** The reasons a run's `AbortSignal` can carry; see {@link AbortReasonCodes}. */
export type AbortReasonCode = (typeof AbortReasonCodes)[number];

/** What a code means and what to do about it, as the README's error table says. */
export interface ErrorDescription {
  /** What went wrong. */
  readonly meaning: string;
  /** What the user or operator does about it. */
  readonly action: string;
}

/** Every code's description, in the order of {@link ErrorCodes}: the README's error table is rendered from it. */
export const ERROR_TABLE: { readonly [C in ErrorCode]: ErrorDescription } = {
  invalidCron: {
    meaning: 'A cron expression is malformed; the message names the field at fault.',
    action: 'Fix that field (six fields, seconds first); `leasehold next "<expr>"` prints the fire times of an expression that parses.',
  },
  invalidZone: {
    meaning: 'A zone is neither an IANA zone id, a fixed offset like `+02:00`, nor `UTC`.',
    action: 'Use an IANA id (`Europe/Berlin`), an offset or `UTC`; leasehold never falls back to UTC silently.',
  },
  invalidDuration: {
    meaning: 'A duration is neither a number of milliseconds nor a string like `10s`, or is out of range.',
    action: 'Give milliseconds or `500ms`, `10s`, `5m`, `1h`, `1d`: more than zero (zero allowed for a delay), at most 24 days.',
  },
  invalidJob: {
    meaning: 'A job definition is wrong; the message names the job and the field.',
    action: 'Fix the field named; `leasehold check <module>` runs the same checks in CI.',
  },
  duplicateJob: {
    meaning: 'Two jobs share an id.',
    action: 'Give each job its own id.',
  },
  invalidConfig: {
    meaning: 'A runner option, flag or environment variable is wrong, or the node cannot start with it.',
    action: 'Fix the option, flag or variable the message names (see [Configuration](#configuration)); the CLI exits with status 2.',
  },
  invalidModule: {
    meaning: 'A jobs module could not be loaded or does not export an array of jobs.',
    action: 'Check the path, that the module loads on its own, and that its default export is an array of jobs.',
  },
  invalidState: {
    meaning: 'A call that the state of the runner (or of the object called) does not allow.',
    action: 'Fix the calling code: `start()` runs once, `add()` before `stop()`, `status()` needs Redis, an `@Async` method is called once its instance is registered.',
  },
  timeout: {
    meaning: 'A run outlived its timeout (an abort reason).',
    action: 'Stop the handler when `ctx.signal` aborts, or give the job a longer `timeout`; the run is recorded `timedOut`.',
  },
  lockLost: {
    meaning: 'A run\'s lease could not be extended or was taken, so another node may run the job (an abort reason).',
    action: 'Stop writing when `ctx.signal` aborts; keep blocking or CPU-heavy work off the event loop, check Redis latency, or give the job a longer `lease`.',
  },
  shutdown: {
    meaning: 'The node is shutting down and the shutdown grace has passed (an abort reason).',
    action: 'Stop the handler when `ctx.signal` aborts; the run is recorded `interrupted`. A longer shutdown grace (`shutdownGrace`, `LEASEHOLD_SHUTDOWN_GRACE`) lets runs finish.',
  },
  cancelled: {
    meaning: 'An operator cancelled the run (an abort reason).',
    action: 'Stop the handler when `ctx.signal` aborts; the run is recorded `interrupted`.',
  },
  redisError: {
    meaning: 'Redis refused a command, failed, or did not answer in time.',
    action: 'Check that Redis is reachable and healthy; a claim that fails is a `failed` run, and the HTTP routes answer 503.',
  },
  invalidTask: {
    meaning: 'A task definition, a submission or an executor\'s configuration is wrong; the message names the task or executor and the field.',
    action: 'Fix the field or option named: a payload must be structured-cloneable for a worker executor and JSON for a queue executor.',
  },
  queueFull: {
    meaning: 'A task was submitted to an executor whose queue is at its limit.',
    action: 'Submit again later, raise the executor\'s `queueLimit` or `concurrency`, or move the work to a queue executor.',
  },
  unknownTask: {
    meaning: 'A task ran on a node (or in a worker thread) where no task of that id is registered or exported.',
    action: 'Register the task on the nodes that consume its executor (`runner.addTask`), or export it from its `module`; a queue task is kept in the failed set.',
  },
};

/** The README's error table, rendered from {@link ERROR_TABLE}. */
export function renderErrorTable(): string {
  const rows = Object.values(ErrorCodes).map((code) => `| \`${code}\` | ${ERROR_TABLE[code].meaning} | ${ERROR_TABLE[code].action} |`);
  return ['| code | meaning | what to do |', '|---|---|---|', ...rows].join('\n');
}

/**
 * The only error class leasehold throws. `code` is stable; `message` names the input and the
 * field at fault.
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
