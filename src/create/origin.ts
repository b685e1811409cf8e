/**
 * Where code runs from: each run of a job and each task attempt runs in an async context
 * (`AsyncLocalStorage`) that names it and the runner it belongs to, so that a rejection nobody
 * handles or an exception nobody catches in its code, however deep in its callbacks, is told
 * with the job or task it came from (`unhandled.ts`). The context is set through the run and
 * task hooks ports, around whatever other hooks (the tracer's) do.
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RunHook, RunHooks } from '../runner/hooks.js';
import type { TaskHooks } from '../tasks/index.js';

/** The run or task whose code is running, and the runner that runs it. */
export interface Origin {
  /** The runner (its guard, see `unhandled.ts`). */
  readonly owner: object;
  readonly jobId?: string;
  readonly runId?: string;
  readonly task?: string;
  readonly taskId?: string;
  readonly executor?: string;
}

const origins = new AsyncLocalStorage<Origin>();

/** The origin of the code running now, if it is a run's or a task's. */
export function currentOrigin(): Origin | undefined {
  return origins.getStore();
}

/** The run hooks `inner` (the tracer's), each attempt also run in its origin. */
export function runOrigins(inner: RunHooks, owner: object): RunHooks {
  return {
    begin(run) {
      const hook: RunHook | undefined = inner.begin(run);
      const origin: Origin = { owner, jobId: run.jobId, runId: run.runId };
      return {
        call: (handler) => origins.run(origin, () => (hook ? hook.call(handler) : handler())),
        logFields: () => hook?.logFields(),
        event: (name, attributes) => hook?.event(name, attributes),
        end: (ended) => hook?.end(ended),
      };
    },
  };
}

/** The task hooks `inner` (the tracer's), each attempt on this node also run in its origin. */
export function taskOrigins(inner: TaskHooks, owner: object): TaskHooks {
  return {
    capture: () => inner.capture(),
    begin(start) {
      const hook = inner.begin(start);
      const origin: Origin = { owner, task: start.task, taskId: start.taskId, executor: start.executor };
      return { call: (handler) => origins.run(origin, () => (hook ? hook.call(handler) : handler())) };
    },
  };
}
