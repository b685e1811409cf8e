/**
 * What a handler gets: its run's context, with the signal and logger made when first read,
 * and the signal of a leased run checking the lease whenever it is asked.
 * @module
 */
import type { Logger } from '../logger.js';
import type { JobContext } from '../schedule/job.js';
import type { RunParams } from './run.js';
import type { SubmitTask } from '../schedule/submit.js';

/** What a context reads of its run. */
export interface ContextSource {
  readonly runId: string;
  readonly attemptNumber: number;
  readonly attemptStartedAt: number;
  signal(): AbortSignal;
  logger(): Logger;
}

/** What a handler gets; its signal and logger are made when first read. */
export class RunContext implements JobContext {
  readonly jobId: string;
  readonly runId: string;
  readonly scheduledAt: Date;
  readonly startedAt: Date;
  readonly instanceId: string;
  // Set only for a leased run, so an instance job's context has no such property at all.
  declare readonly fencingToken?: number;
  // Private to the runner: a handler that logs or serializes its context sees only the above.
  readonly #run: ContextSource;

  /** Which attempt at the tick this is: 1, or more for a retry. */
  readonly attempt: number;
  /** Submits a background task, as `runner.submit` does. */
  readonly submit: SubmitTask;

  constructor(run: ContextSource, p: Pick<RunParams, 'job' | 'tick' | 'instanceId' | 'lease' | 'submit'>) {
    this.#run = run;
    this.submit = p.submit;
    this.jobId = p.job.id;
    this.runId = run.runId;
    this.attempt = run.attemptNumber;
    this.scheduledAt = new Date(p.tick);
    this.startedAt = new Date(run.attemptStartedAt);
    this.instanceId = p.instanceId;
    if (p.lease) (this as { fencingToken?: number }).fencingToken = p.lease.token;
  }

  get signal(): AbortSignal {
    return this.#run.signal();
  }

  get log(): Logger {
    return this.#run.logger();
  }
}

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')?.get;

/**
 * Makes a leased run's signal check the lease deadline whenever the handler asks it
 * (`signal.aborted`, `signal.throwIfAborted()`). After the process was frozen (SIGSTOP, a
 * long GC pause) timers fire in the order they expired, so a handler's own timer may run
 * before the lease watcher's: asking the signal still tells it, before it does more work,
 * that the lease ran out meanwhile.
 */
export function guardSignal(signal: AbortSignal, check: () => void): void {
  if (!abortedGetter) return;
  const getter = abortedGetter;
  Object.defineProperty(signal, 'aborted', {
    configurable: true,
    get(this: AbortSignal) {
      check();
      return getter.call(this) as boolean;
    },
  });
  const throwIfAborted = signal.throwIfAborted.bind(signal);
  Object.defineProperty(signal, 'throwIfAborted', {
    configurable: true,
    value: () => {
      check();
      throwIfAborted();
    },
  });
}
