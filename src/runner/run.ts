/**
 * One run of a job: the handler call, its timeout, its lease watcher, and its outcome.
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { LeaseholdError, type AbortReasonCode, errorMessage } from '../errors.js';
import type { NormalizedJob, JobContext } from '../schedule/job.js';
import { formatDuration } from '../schedule/duration.js';
import type { HeldLease } from './coordinator.js';
import type { Emitter, RunOutcome, RunStartedEvent } from './events.js';

/** How long after an abort a handler that ignores its signal is reported with the abort's outcome. */
export const REPORT_AFTER_ABORT_MS = 1_000;

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
  const runId = randomUUID();
  const startedAt = p.now();
  // The signal is made when the handler first reads it (many never do); an abort before then
  // is carried over.
  let controller: AbortController | undefined;
  const started: RunStartedEvent = {
    jobId: p.job.id,
    runId,
    scope: p.job.scope,
    instanceId: p.instanceId,
    scheduledAt: p.tick,
    startedAt,
    lagMs: startedAt - p.tick,
    fencingToken: p.lease?.token,
    manual: p.manual,
  };
  let abortedReason: AbortReasonCode | undefined;
  let abortError: LeaseholdError | undefined;
  let reported = false;
  let reportTimer: NodeJS.Timeout | undefined;
  let leaseLost = false;

  const report = (outcome: RunOutcome, error: string | undefined, cause: unknown): void => {
    if (reported) return;
    reported = true;
    const endedAt = p.now();
    p.emitter.emit('runEnded', { ...started, outcome, endedAt, durationMs: Math.max(0, endedAt - startedAt), error, cause });
  };

  const abort = (reason: AbortReasonCode, detail?: string): void => {
    if (abortedReason !== undefined || reported) return;
    abortedReason = reason;
    // Once aborted the timeout has nothing left to do; a handler that ignores the abort must not
    // keep the process alive for the rest of it after a stop.
    clearTimeout(timeout);
    abortError = new LeaseholdError(reason, detail ?? `job "${p.job.id}" run aborted: ${reason}`);
    controller?.abort(abortError);
    reportTimer = setTimeout(() => report(OUTCOME_OF[reason], abortError?.message, abortError), REPORT_AFTER_ABORT_MS);
    reportTimer.unref();
  };

  const timeout = setTimeout(
    () => abort('timeout', `job "${p.job.id}" timed out after ${formatDuration(p.timeoutMs)}`),
    p.timeoutMs,
  );
  const watcher = p.lease?.watch(p.leaseMs, (why) => {
    leaseLost = true;
    if (/event loop blocked/.test(why)) {
      p.emitter.emit('warning', {
        jobId: p.job.id,
        message: `job "${p.job.id}" blocked the event loop past its lease (${formatDuration(p.leaseMs)}): ${why}. The run is recorded lockLost because another node may have taken the lease; move blocking or CPU-heavy work off the event loop (a worker thread) or give the job a longer lease`,
      });
    }
    abort('lockLost', `job "${p.job.id}" lost its lease: ${why}`);
  });
  /** A handler that blocked the loop may end before any timer ran: check the lease deadline first. */
  const checkLease = (): void => watcher?.check();
  const signal = (): AbortSignal => {
    if (!controller) {
      controller = new AbortController();
      if (watcher) guardSignal(controller.signal, checkLease);
      if (abortError) controller.abort(abortError);
    }
    return controller.signal;
  };

  let log: Logger | undefined;
  const ctx: JobContext = {
    get signal() {
      return signal();
    },
    // Created on first use: most handlers of frequent jobs never log.
    get log() {
      return (log ??= p.logger.child({ jobId: p.job.id, runId }));
    },
    jobId: p.job.id,
    runId,
    scheduledAt: new Date(p.tick),
    startedAt: new Date(startedAt),
    instanceId: p.instanceId,
    ...(p.lease ? { fencingToken: p.lease.token } : {}),
  };

  p.emitter.emit('runStarted', started);

  const settled = (async (): Promise<void> => {
    try {
      try {
        await null; // the handler starts after executeRun has returned, never inside it
        await p.job.run(ctx);
        checkLease();
        if (abortedReason) report(OUTCOME_OF[abortedReason], abortError?.message, abortError);
        else report('succeeded', undefined, undefined);
      } catch (err) {
        checkLease();
        if (abortedReason) report(OUTCOME_OF[abortedReason], abortError?.message, err);
        else report('failed', errorMessage(err), err);
      }
      clearTimeout(timeout);
      if (reportTimer) clearTimeout(reportTimer);
      watcher?.stop();
      // A lost lease is never released: another node may hold it now.
      if (p.lease && !leaseLost) {
        await p.lease.release(p.delayAfterMs).catch((err: unknown) => {
          p.logger.warn({ err, jobId: p.job.id }, 'releasing the lease failed; it expires on its own');
        });
      }
    } catch (err) {
      p.logger.error({ err, jobId: p.job.id }, 'run bookkeeping failed');
    }
  })();

  return {
    runId,
    startedAt,
    get abortedReason() {
      return abortedReason;
    },
    settled,
    abort,
    reportNow: () => {
      if (abortedReason) report(OUTCOME_OF[abortedReason], abortError?.message, abortError);
    },
  };
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
