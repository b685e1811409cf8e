/**
 * One run of a job: the handler call, its timeout, its lease watcher, and its outcome.
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Timers, TimerHandle } from '../clock.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, type AbortReasonCode, errorMessage } from '../errors.js';
import type { NormalizedJob, JobContext } from '../schedule/job.js';
import { formatDuration } from '../schedule/duration.js';
import type { HeldLease, LeaseLoss, LeaseWatchHandle } from '../lease/port.js';
import type { Emitter, RunOutcome, RunStartedEvent } from './events.js';

/** How long after an abort a handler that ignores its signal is reported with the abort's outcome. */
const REPORT_AFTER_ABORT_MS = 1_000;

/** A run in progress. */
export interface ActiveRun {
  readonly runId: string;
  readonly startedAt: number;
  /** The abort reason, once aborted. */
  readonly abortedReason: AbortReasonCode | undefined;
  /** Resolves when the handler has settled and the lease is released. Never rejects. */
  readonly settled: Promise<void>;
  /** Aborts the run's signal (once); the outcome follows the reason. */
  abort(reason: AbortReasonCode, detail?: string): void;
  /** Reports the outcome now if not yet reported (shutdown gives up on a stuck handler). */
  reportNow(): void;
}

/** What a run needs from the runner. */
export interface RunParams {
  readonly job: NormalizedJob;
  readonly tick: number;
  readonly manual: boolean;
  readonly timeoutMs: number;
  readonly leaseMs: number;
  readonly lease: HeldLease | undefined;
  readonly instanceId: string;
  readonly logger: Logger;
  readonly clock: Timers;
  readonly now: () => number;
  readonly emitter: Emitter;
  /** fixedDelay: passed to the lease release so the cluster knows the next due time. */
  readonly delayAfterMs: number | undefined;
}

const OUTCOME_OF: Record<AbortReasonCode, RunOutcome> = {
  timeout: 'timedOut',
  lockLost: 'lockLost',
  shutdown: 'interrupted',
  cancelled: 'interrupted',
};

/** Starts a run: calls the handler, arms its timeout and lease watcher. */
export function executeRun(p: RunParams): ActiveRun {
  return new Run(p);
}

/** One run: its handler call, timeout, lease watch and outcome. */
class Run implements ActiveRun {
  readonly runId: string;
  readonly startedAt: number;
  readonly settled: Promise<void>;
  abortedReason: AbortReasonCode | undefined;
  private readonly started: RunStartedEvent;
  // The signal is made when the handler first reads it (many never do); an abort before then
  // is carried over.
  private controller: AbortController | undefined;
  private abortError: LeaseholdError | undefined;
  private reported = false;
  private reportTimer: TimerHandle | undefined;
  private leaseLost = false;
  private readonly timeout: TimerHandle;
  private readonly watcher: LeaseWatchHandle | undefined;
  private log: Logger | undefined;

  constructor(private readonly p: RunParams) {
    this.runId = randomUUID();
    const startedAt = (this.startedAt = p.now());
    this.started = {
      jobId: p.job.id,
      runId: this.runId,
      scope: p.job.scope,
      instanceId: p.instanceId,
      scheduledAt: p.tick,
      startedAt,
      lagMs: startedAt - p.tick,
      fencingToken: p.lease?.token,
      manual: p.manual,
    };
    this.timeout = p.clock.setTimer(() => this.timedOut(), p.timeoutMs);
    this.watcher = p.lease?.watch(p.leaseMs, (loss) => this.onLeaseLost(loss));
    const ctx = new RunContext(this, p);
    p.emitter.emit('runStarted', this.started);
    this.settled = this.settle(ctx);
  }

  /** Aborts the run's signal (once); the outcome follows the reason. */
  abort(reason: AbortReasonCode, detail?: string): void {
    if (this.abortedReason !== undefined || this.reported) return;
    this.abortedReason = reason;
    // Once aborted the timeout has nothing left to do; a handler that ignores the abort must not
    // keep the process alive for the rest of it after a stop.
    this.p.clock.clearTimer(this.timeout);
    this.abortError = new LeaseholdError(reason, detail ?? `job "${this.p.job.id}" run aborted: ${reason}`);
    this.controller?.abort(this.abortError);
    // A handler that ignores the abort is reported with the abort's outcome after a while.
    this.reportTimer = this.p.clock.setTimer(() => this.reportNow(), REPORT_AFTER_ABORT_MS, true);
  }

  /** Reports the abort's outcome now if not yet reported (shutdown gives up on a stuck handler). */
  reportNow(): void {
    if (this.abortedReason) this.report(OUTCOME_OF[this.abortedReason], this.abortError?.message, this.abortError);
  }

  timedOut(): void {
    this.abort(ErrorCodes.timeout, `job "${this.p.job.id}" timed out after ${formatDuration(this.p.timeoutMs)}`);
  }

  /** The handler's signal, made on first use. */
  signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.watcher) guardSignal(this.controller.signal, () => this.checkLease());
      if (this.abortError) this.controller.abort(this.abortError);
    }
    return this.controller.signal;
  }

  /** The run's logger, made on first use: most handlers of frequent jobs never log. */
  logger(): Logger {
    return (this.log ??= this.p.logger.child({ jobId: this.p.job.id, runId: this.runId }));
  }

  private onLeaseLost(loss: LeaseLoss): void {
    const { p } = this;
    this.leaseLost = true;
    if (loss.cause === 'loopBlocked') {
      p.emitter.emit('warning', {
        jobId: p.job.id,
        message: `job "${p.job.id}" blocked the event loop past its lease (${formatDuration(p.leaseMs)}): ${loss.message}. The run is recorded lockLost because another node may have taken the lease; move blocking or CPU-heavy work off the event loop (a worker thread) or give the job a longer lease`,
      });
    }
    this.abort(ErrorCodes.lockLost, `job "${p.job.id}" lost its lease: ${loss.message}`);
  }

  /** A handler that blocked the loop may end before any timer ran: check the lease deadline first. */
  private checkLease(): void {
    this.watcher?.check();
  }

  private report(outcome: RunOutcome, error: string | undefined, cause: unknown): void {
    if (this.reported) return;
    this.reported = true;
    const endedAt = this.p.now();
    this.p.emitter.emit('runEnded', { ...this.started, outcome, endedAt, durationMs: Math.max(0, endedAt - this.startedAt), error, cause });
  }

  private async settle(ctx: JobContext): Promise<void> {
    const { p } = this;
    try {
      try {
        await null; // the handler starts after executeRun has returned, never inside it
        await p.job.run(ctx);
        this.checkLease();
        if (this.abortedReason) this.reportNow();
        else this.report('succeeded', undefined, undefined);
      } catch (err) {
        this.checkLease();
        if (this.abortedReason) this.report(OUTCOME_OF[this.abortedReason], this.abortError?.message, err);
        else this.report('failed', errorMessage(err), err);
      }
      p.clock.clearTimer(this.timeout);
      if (this.reportTimer !== undefined) p.clock.clearTimer(this.reportTimer);
      this.watcher?.stop();
      // A lost lease is never released: another node may hold it now.
      if (p.lease && !this.leaseLost) {
        await p.lease.release(p.delayAfterMs).catch((err: unknown) => {
          p.logger.warn({ err, jobId: p.job.id }, 'releasing the lease failed; it expires on its own');
        });
      }
    } catch (err) {
      p.logger.error({ err, jobId: p.job.id }, 'run bookkeeping failed');
    }
  }
}

/** What a handler gets; its signal and logger are made when first read. */
class RunContext implements JobContext {
  readonly jobId: string;
  readonly runId: string;
  readonly scheduledAt: Date;
  readonly startedAt: Date;
  readonly instanceId: string;
  // Set only for a leased run, so an instance job's context has no such property at all.
  declare readonly fencingToken?: number;
  // Private to the runner: a handler that logs or serializes its context sees only the above.
  readonly #run: Run;

  constructor(run: Run, p: RunParams) {
    this.#run = run;
    this.jobId = p.job.id;
    this.runId = run.runId;
    this.scheduledAt = new Date(p.tick);
    this.startedAt = new Date(run.startedAt);
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
function guardSignal(signal: AbortSignal, check: () => void): void {
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
