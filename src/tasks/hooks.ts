/**
 * The task hooks port: what an adapter (the tracer) does around each task. At submission it
 * captures what the task carries from where it was submitted (the active trace context, as
 * W3C headers: plain strings, so they cross into a queued task and to another node); as an
 * attempt starts on the node that runs it, it begins with that origin and runs the handler
 * through the hook's `call`. The attempt's end reaches the adapter as the runner's `taskEnded`
 * event. The tasks layer knows no tracer.
 * @module
 */

/** What a task carries from where it was submitted: W3C trace context headers (`traceparent`, `tracestate`). */
export type TaskOrigin = Readonly<Record<string, string>>;

/** An attempt of a task about to start on this node. */
export interface TaskStart {
  /** The task's name (its definition's id). */
  readonly task: string;
  /** The submission's id (`ctx.taskId`). */
  readonly taskId: string;
  readonly executor: string;
  readonly kind: string;
  readonly instanceId: string;
  readonly attempt: number;
  /** What the submission captured, if anything. */
  readonly origin: TaskOrigin | undefined;
}

/** What the tasks layer asks of a task hooks adapter. */
export interface TaskHooks {
  /** At submission, in the submitter's context: what the task carries; undefined when nothing. */
  capture(): TaskOrigin | undefined;
  /** An attempt starts; undefined: nothing to do around it. */
  begin(start: TaskStart): TaskHook | undefined;
}

/** One attempt's hook (ended by the attempt's `taskEnded` event). */
export interface TaskHook {
  /** Calls the handler (in the hook's context); returns what it returns. */
  call<T>(handler: () => T): T;
}

/** Runs `fn` inside the hook of an attempt, when hooks are set and want one. */
export function withTaskHook<T>(hooks: TaskHooks | undefined, start: TaskStart, fn: () => T): T {
  const hook = hooks?.begin(start);
  return hook ? hook.call(fn) : fn();
}
