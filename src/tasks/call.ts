/**
 * One call of an `@Async` method: it submits the method's task and returns the promise of its
 * result, which the caller may await or ignore. Whether or not it is awaited, its failure is
 * reported once and never becomes an unhandled rejection (SPEC 8): a failure of the task is its
 * attempt's end (`taskEnded`: the first failure and the recovery logged, counted, on the task's
 * span); a submission the executor refused (its queue full, the node stopping) is reported as
 * an attempt that ended at once, `failed` (or `interrupted` by a shutdown), with a span of its
 * own under the caller's.
 * @module
 */
import { ErrorCodes, errorMessage, isLeaseholdError } from '../errors.js';
import type { ResolvedExecutor } from './config.js';
import type { TaskOrigin } from './hooks.js';
import type { ExecutorHost } from './local.js';
import type { TaskHandle } from './task.js';

/** What a call needs of the tasks layer. */
export interface CallHost {
  readonly host: ExecutorHost;
  /** Submits the call's task. */
  submit(): Promise<TaskHandle>;
  /** The executor of the call's task (undefined for a task not registered here). */
  executor(): ResolvedExecutor | undefined;
}

let refusedSeq = 0;

/** Makes the call `task(payload)`: see the module comment. */
export function callTask(call: CallHost, task: string): Promise<unknown> {
  // Captured here, in the caller's context: a refused call's span is a child of the caller's.
  const origin = call.host.hooks?.capture();
  const result = call.submit().then(
    (handle) => handle.result(),
    (err: unknown) => {
      refused(call, task, err, origin);
      throw err;
    },
  );
  result.then(undefined, reportedAlready);
  return result;
}

/** A failure of the call was reported as its attempt's end; a caller that awaits it gets it too. */
function reportedAlready(_err: unknown): void {}

function refused(call: CallHost, task: string, err: unknown, origin: TaskOrigin | undefined): void {
  const config = call.executor();
  if (!config) return;
  const { host } = call;
  const taskId = `refused-${++refusedSeq}`;
  const start = { task, taskId, executor: config.name, kind: config.kind, instanceId: host.instanceId, attempt: 1, origin };
  // The span begins and ends with the event below.
  host.hooks?.begin(start);
  const outcome = isLeaseholdError(err, ErrorCodes.shutdown) ? 'interrupted' : 'failed';
  host.emitter.emit('taskEnded', { ...start, outcome, durationMs: 0, error: errorMessage(err), cause: err, willRetry: false });
}
