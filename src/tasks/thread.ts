/**
 * What crosses between a node and a worker thread: the message that asks a thread to run a
 * task's or a job's handler, the messages on its port (log lines one way, the abort the
 * other), the envelope of the answer, and the mark that tells a module it is loaded in a
 * leasehold worker thread.
 * @module
 */
import type { ErrorCode } from '../errors.js';

/** The log levels a worker's `ctx.log` forwards. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * What every thread of a pool is given once, as piscina's `workerData`: what each request would
 * otherwise carry again. Aborts reach the thread, and log lines the node, on the pool's two
 * broadcast channels (`<channel>:down`, `<channel>:up`) rather than a port made and transferred
 * per task, which would cost more than a small task does.
 */
export interface ThreadData {
  /** The pool's channel name. */
  readonly channel: string;
  /** The context's fields that every request of the pool shares (a task's executor and node). */
  readonly ctx: Readonly<Record<string, string>>;
}

/**
 * What a thread is asked to run: only what changes from one request to the next, since each is
 * copied to the thread and a small task costs less than copying much ({@link ThreadData} has the rest).
 */
export interface ThreadRequest {
  /** The request's number, which an abort names. */
  readonly seq: number;
  /** A task (`payload` given) or a job's run. */
  readonly kind: 'task' | 'job';
  /** The module URL (or absolute path) that exports the task or job. */
  readonly module: string;
  /** The task's or job's id. */
  readonly id: string;
  readonly payload?: unknown;
  /** The context's plain fields besides the pool's (`signal` and `log` are made in the thread). */
  readonly ctx: Readonly<Record<string, string | number | Date | undefined>>;
  /** The levels the node writes, so `ctx.log.isLevelEnabled` answers in the thread: {@link levelBits}. */
  readonly levels: number;
}

/** The levels of {@link LOG_LEVELS} that `enabled` accepts, as bits (bit i: `LOG_LEVELS[i]`): a number is copied at no cost. */
export function levelBits(enabled: (level: LogLevel) => boolean): number {
  let bits = 0;
  LOG_LEVELS.forEach((level, i) => {
    if (enabled(level)) bits |= 1 << i;
  });
  return bits;
}

/** Whether `bits` (of {@link levelBits}) holds `level`. */
export function hasLevel(bits: number, level: string): boolean {
  const i = (LOG_LEVELS as readonly string[]).indexOf(level);
  return i >= 0 && (bits & (1 << i)) !== 0;
}

/** A message from a thread: a log line through `ctx.log`, with the task's or run's bindings. */
export interface LogMessage {
  readonly type: 'log';
  readonly level: LogLevel;
  readonly bindings: Readonly<Record<string, unknown>>;
  readonly args: readonly unknown[];
}

/** A message to the threads: abort the handler of request `seq`. */
export interface AbortMessage {
  readonly type: 'abort';
  readonly seq: number;
  readonly code: ErrorCode;
  readonly message: string;
}

/** The thread's answer. */
export type ThreadAnswer = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown; readonly code?: ErrorCode };

/**
 * The mark a leasehold worker thread sets on its global object before it loads any module: a
 * registered symbol, so every copy of leasehold in the thread sees it (the package's, and one
 * a `.ts` module reaches through tsx).
 */
const WORKER_THREAD = Symbol.for('leasehold.workerThread');

/** Marks this thread as a leasehold worker thread (the thread's entry does, before it loads a task's or job's module). */
export function markWorkerThread(): void {
  (globalThis as { [WORKER_THREAD]?: boolean })[WORKER_THREAD] = true;
}

/**
 * Whether this code runs in a thread that leasehold made to run a worker task or a job with
 * `thread: 'worker'`. Such a thread imports the task's or job's `module` again, top-level code
 * included: a module that also starts a server or a runner guards that code with
 * `if (!isWorkerThread())` (or better, keeps its worker tasks in a module of their own without
 * side effects). False on the main thread and in threads leasehold did not make.
 *
 * @example
 * ```ts
 * import { isWorkerThread } from 'leasehold';
 *
 * if (!isWorkerThread()) await startServer();
 * ```
 */
export function isWorkerThread(): boolean {
  return (globalThis as { [WORKER_THREAD]?: boolean })[WORKER_THREAD] === true;
}
