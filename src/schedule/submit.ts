/**
 * What submitting a background task takes and gives, shared by `runner.submit` and a run's
 * `ctx.submit`, and where code runs (the executors themselves are the tasks layer's).
 * @module
 */
import type { Duration } from './duration.js';

/**
 * Where code runs: the kinds of executor a task runs on, and (`loop` or `worker`, see
 * {@link JobThread}) where a scheduled job's handler runs.
 */
export const ExecutorKinds = { loop: 'loop', worker: 'worker', queue: 'queue' } as const;
/** `loop` (the event loop), `worker` (worker threads) or `queue` (a durable BullMQ queue). */
export type ExecutorKind = (typeof ExecutorKinds)[keyof typeof ExecutorKinds];
/**
 * Where a scheduled job's handler runs: `loop` (the event loop) or `worker` (a worker thread),
 * the places of the executor kinds of the same names. Never `queue`: a job's ticks are its
 * schedule's.
 */
export type JobThread = Exclude<ExecutorKind, 'queue'>;

/** Options of a submission (`runner.submit(task, payload, options)`). */
export interface SubmitOptions {
  /** Start no earlier than this long from now. */
  readonly delay?: Duration;
  /**
   * A deduplication id: while a task submitted with this id is waiting or running (and, on a
   * queue executor, while it is kept), submitting the same id again returns the same task.
   * It becomes the task's `ctx.taskId`.
   */
  readonly id?: string;
  /** Queue executors: how many times to try the task in all (default: the executor's `attempts`). */
  readonly attempts?: number;
  /** Queue executors: the first wait before another attempt, doubled each time (default: the executor's `backoff`). */
  readonly backoff?: Duration;
  /** Abort the task after this long (default: the task's, else its executor's). */
  readonly timeout?: Duration;
}

/** A submitted task. */
export interface TaskHandle<R = unknown> {
  /** The task's id (`ctx.taskId`). */
  readonly id: string;
  /**
   * The task's result: resolves with the handler's value, rejects with its error (or a
   * LeaseholdError for a timeout, cancel or shutdown). A task whose result is never asked for
   * is fire-and-forget: its failure is logged and counted, never an unhandled rejection.
   */
  result(): Promise<R>;
}

/** A task as a submission names it: its definition (from `defineTask`), typed by its handler. */
export interface TaskReference<P, R> {
  /** The task's id. */
  readonly id: string;
  /** Its handler; only its types matter here. */
  readonly run: (payload: P, ctx: never) => R | Promise<R>;
}

/**
 * Submits a background task: its definition, or the id of a task registered on the node
 * (`runner.addTask`, or `export const tasks` in a jobs module). Resolves once the task is
 * accepted, with its handle.
 */
export type SubmitTask = <P, R>(task: TaskReference<P, R> | string, payload: P, options?: SubmitOptions) => Promise<TaskHandle<R>>;
