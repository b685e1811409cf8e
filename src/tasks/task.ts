/**
 * Tasks: a named piece of one-off work, `defineTask`, what its handler receives, and the
 * options of a submission, with the checks run when a task is defined or submitted.
 * @module
 */
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage, leaseholdError } from '../errors.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';
import { checksDeferred } from '../schedule/deferred.js';
import { describe, readDuration, type Duration } from '../schedule/duration.js';
import type { TaskOrigin } from './hooks.js';

/** What a task's handler receives beside its payload. */
export interface TaskContext {
  /** Aborts on timeout, cancel and shutdown; `signal.reason` is a LeaseholdError whose code says why. */
  readonly signal: AbortSignal;
  /** A pino child logger bound to the task, its id and its executor. */
  readonly log: Logger;
  /** This submission's id: stable across attempts (the deduplication id when one was given), for idempotency. */
  readonly taskId: string;
  /** The task's name (its definition's `id`). */
  readonly task: string;
  /** The executor it runs on. */
  readonly executor: string;
  /** Which attempt this is: 1, or more when a queue executor runs it again (a retry, or a node that died mid-task). */
  readonly attempt: number;
  /** The node running it. */
  readonly instanceId: string;
}

/** A task's handler: its promise's value is the task's result. */
export type TaskHandler<P = unknown, R = unknown> = (payload: P, ctx: TaskContext) => R | Promise<R>;

/** A piece of one-off work, as a user writes it; see {@link defineTask}. */
export interface TaskDefinition<P = unknown, R = unknown> {
  /** Unique id: letters, digits, `.`, `_`, `-`, `:` (as a job id). */
  readonly id: string;
  /**
   * The executor it runs on, by name: a configured one (a name nobody configured is refused with
   * `unknownExecutor`, unless the executors have a catch-all entry `'*'`). Default `default` (an
   * event-loop executor unless configured otherwise).
   */
  readonly executor?: string;
  /**
   * The module that exports this task (its `import.meta.url`), loaded in a worker thread to run
   * it there: needed by tasks on a `worker` executor.
   */
  readonly module?: string;
  /** Abort the task after this long (default: its executor's timeout). */
  readonly timeout?: Duration;
  /** The handler. */
  readonly run: TaskHandler<P, R>;
}

export type { SubmitOptions, TaskHandle } from '../schedule/submit.js';

/** A checked task definition. */
export interface NormalizedTask {
  readonly id: string;
  readonly executor: string;
  readonly module: string | undefined;
  readonly timeoutMs: number | undefined;
  readonly run: TaskHandler;
  /** The definition it was made from. */
  readonly definition: object;
  /** What this submission captured where it was made (set on a submission's copy only). */
  readonly origin?: TaskOrigin;
}

/** The executor a task runs on when its definition names none. */
export const DEFAULT_EXECUTOR = 'default';

/** An executor's name: as a job id. */
export const EXECUTOR_NAME_PATTERN = JOB_ID_PATTERN;

const KEYS = new Set(['id', 'executor', 'module', 'timeout', 'run']);

/**
 * Checks a task definition and returns it unchanged, typed.
 * @throws LeaseholdError `invalidTask` naming the task and the field.
 */
export function defineTask<P = unknown, R = unknown>(task: TaskDefinition<P, R>): TaskDefinition<P, R> {
  if (!checksDeferred()) normalizeTask(task);
  return task;
}

function fail(name: string, field: string, message: string): never {
  throw leaseholdError(ErrorCodes.invalidTask, { task: name, field, problem: message });
}

/** Checks a task definition and converts it. */
export function normalizeTask(input: unknown): NormalizedTask {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new LeaseholdError(ErrorCodes.invalidTask, `a task must be an object, got ${describe(input)}`);
  }
  const source = input as Record<string, unknown>;
  const id = source['id'];
  if (typeof id !== 'string' || !JOB_ID_PATTERN.test(id)) {
    throw leaseholdError(ErrorCodes.invalidTask, { task: describe(id), field: 'id', problem: 'must be 1 to 128 letters, digits, ".", "_", "-" or ":"' });
  }
  const name = JSON.stringify(id);
  for (const key of Object.keys(source)) if (!KEYS.has(key)) fail(name, key, `unknown field (known: ${[...KEYS].join(', ')})`);
  const executor = source['executor'] ?? DEFAULT_EXECUTOR;
  if (typeof executor !== 'string' || !EXECUTOR_NAME_PATTERN.test(executor)) fail(name, 'executor', `${describe(executor)} is not an executor name (letters, digits, ".", "_", "-", ":")`);
  const module = source['module'];
  if (module !== undefined && (typeof module !== 'string' || module === '')) fail(name, 'module', `${describe(module)} must be a module URL or path (the task module's import.meta.url)`);
  if (typeof source['run'] !== 'function') fail(name, 'run', 'must be a function (the task handler)');
  let timeoutMs: number | undefined;
  if (source['timeout'] !== undefined) {
    try {
      timeoutMs = readDuration(source['timeout'], 'timeout');
    } catch (err) {
      fail(name, 'timeout', errorMessage(err));
    }
  }
  return { id, executor, module, timeoutMs, run: source['run'] as TaskHandler, definition: input };
}

/** Submit options, checked. */
export interface NormalizedSubmit {
  readonly delayMs: number;
  readonly id: string | undefined;
  readonly attempts: number | undefined;
  readonly backoffMs: number | undefined;
  readonly timeoutMs: number | undefined;
}

const SUBMIT_KEYS = new Set(['delay', 'id', 'attempts', 'backoff', 'timeout']);

/** A submission without options (the common case: no object made per task). */
const NO_OPTIONS: NormalizedSubmit = Object.freeze({ delayMs: 0, id: undefined, attempts: undefined, backoffMs: undefined, timeoutMs: undefined });

/** Checks a submission's options. */
export function normalizeSubmit(task: string, opts: unknown): NormalizedSubmit {
  if (opts === undefined) return NO_OPTIONS;
  const bad = (field: string, message: string): never => {
    throw new LeaseholdError(ErrorCodes.invalidTask, `submit ${JSON.stringify(task)}: option "${field}": ${message}`);
  };
  if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) bad('options', `must be an object, got ${describe(opts)}`);
  const o = opts as Record<string, unknown>;
  for (const key of Object.keys(o)) if (!SUBMIT_KEYS.has(key)) bad(key, `unknown option (known: ${[...SUBMIT_KEYS].join(', ')})`);
  const duration = (field: string, zero: boolean): number | undefined => {
    if (o[field] === undefined) return undefined;
    try {
      return readDuration(o[field], field, zero);
    } catch (err) {
      return bad(field, errorMessage(err));
    }
  };
  const id = o['id'];
  if (id !== undefined && (typeof id !== 'string' || !JOB_ID_PATTERN.test(id))) bad('id', `${describe(id)} must be 1 to 128 letters, digits, ".", "_", "-" or ":"`);
  const attempts = o['attempts'];
  if (attempts !== undefined && (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1 || attempts > 100)) bad('attempts', `${describe(attempts)} must be a whole number from 1 to 100`);
  return {
    delayMs: duration('delay', true) ?? 0,
    id: id as string | undefined,
    attempts: attempts as number | undefined,
    backoffMs: duration('backoff', true),
    timeoutMs: duration('timeout', false),
  };
}
