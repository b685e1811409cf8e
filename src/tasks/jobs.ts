/**
 * Scheduled jobs on worker threads (`thread: 'worker'`): the job's handler is replaced, for the
 * runner, by one that runs it in a thread under the run's signal. The run itself (its timeout,
 * lease watch, outcome and events) stays the runner's, on the event loop.
 * @module
 */
import { ErrorCodes, leaseholdError } from '../errors.js';
import { normalizeJob, type JobContext } from '../schedule/job.js';
import type { Tasks } from './index.js';

/**
 * The definition the runner gets for a job: itself on the event loop, or, with `thread: 'worker'`,
 * a copy whose handler runs the job's own in a worker thread (loaded from `module`).
 * @throws LeaseholdError `invalidJob` for a worker job without a module.
 */
export function withThread<T>(definition: T, tasks: Pick<Tasks, 'runJob'>): T {
  // A job on the event loop goes as it is: the runner checks it (normalizing it here too was a
  // third copy of every definition made while a node registers its jobs).
  if (!mayBeWorker(definition)) return definition;
  const job = normalizeJob(definition);
  if (job.thread !== 'worker') return definition;
  const module = job.module;
  if (module === undefined) {
    throw leaseholdError(ErrorCodes.invalidJob, { job: JSON.stringify(job.id), field: 'module', problem: 'a job on a worker thread is loaded there from its module: give module: import.meta.url (the CLI fills it in with the jobs module)' });
  }
  const { id, resourceLimits } = job;
  return { ...definition, run: (ctx: JobContext) => tasks.runJob(id, module, ctx, resourceLimits) };
}

/** Whether a definition may ask for a worker thread (a `thread` that cannot be read is checked by {@link normalizeJob}). */
function mayBeWorker(definition: unknown): boolean {
  if (typeof definition !== 'object' || definition === null) return false;
  try {
    return (definition as { thread?: unknown }).thread === 'worker';
  } catch {
    return true;
  }
}
