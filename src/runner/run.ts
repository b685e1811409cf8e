/**
 * One run of a job: the handler call, its timeout, its lease watcher, and its outcome.
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Timers, TimerHandle } from '../clock.js';
import type { ActiveRun } from './end-runs.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, type AbortReasonCode, errorMessage, isLeaseholdError } from '../errors.js';
import type { NormalizedJob } from '../schedule/job.js';
import { RunContext, guardSignal } from './context.js';
import { formatDuration } from '../schedule/duration.js';
import { retryDelayMs } from '../schedule/retry.js';
import type { HeldLease, LeaseLoss, LeaseWatchHandle } from '../lease/port.js';
import { ABORT_OUTCOMES, type Emitter, type RunOutcome, type RunStartedEvent } from './events.js';
import type { RunHook, RunHooks } from './hooks.js';
import type { SubmitTask } from '../schedule/submit.js';

/** How long after an abort a handler that ignores its signal is reported with the abort's outcome. */
const REPORT_AFTER_ABORT_MS = 1_000;

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
  /** The job's next tick (shared clock): no retry starts at or after it. Null: none planned. */
  readonly nextTickAt: number | null;
  /** What runs around each attempt (the tracer), if anything. */
  readonly hooks?: RunHooks | undefined;
  /** How the run's handler submits a background task (`ctx.submit`). */
  readonly submit: SubmitTask;
}

const OUTCOME_OF = ABORT_OUTCOMES;

/** Starts a run: calls the handler, arms its timeout and lease watcher. */
export function executeRun(p: RunParams): ActiveRun {
  return new Run(p);
}

/**
 * One run: its handler call (again on failure, as the job's retry policy allows, each attempt
 * reported on its own), its timeout (over every attempt), its lease watch and its outcome.
 */
class Run implements ActiveRun {
  runId: string;
  readonly startedAt: number;
  readonly settled: Promise<void>;
  abortedReason: AbortReasonCode | undefined;
  private started: RunStartedEvent;
  /** Ends the wait before a retry early (on an abort). */
  private wakeBackoff: (() => void) | undefined;
  // The signal is made when the handler first reads it (many never do); an abort before then
  // is carried over.
  private controller: AbortController | undefined;
  private abortError: LeaseholdError | undefined;
  private reported = false;
  private reportTimer: TimerHandle | undefined;
  private leaseLost = false;
  /** The lease's release answered that it was ours: the run's record counts unconditionally. */
  private released = false;
  /** The tick's outcome once the handler has settled (reported after the lease's release). */
  private final: { outcome: RunOutcome; error: string | undefined; cause: unknown; endedAt: number } | undefined;
  private readonly timeout: TimerHandle;
  private readonly watcher: LeaseWatchHandle | undefined;
  private log: Logger | undefined;
  private hook: RunHook | undefined;

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
      attempt: 1,
    };
    this.timeout = p.clock.setTimer(() => this.timedOut(), p.timeoutMs);
    this.watcher = p.lease?.watch(p.leaseMs, (loss) => this.onLeaseLost(loss));
    this.hook = p.hooks?.begin(this.started);
    p.emitter.emit('runStarted', this.started);
    this.settled = this.settle();
  }

  /** Aborts the run's signal (once); the outcome follows the reason. */
  abort(reason: AbortReasonCode, detail?: string): void {
    if (this.abortedReason !== undefined || this.reported || this.final) return;
    this.abortedReason = reason;
    // Once aborted the timeout has nothing left to do; a handler that ignores the abort must not
    // keep the process alive for the rest of it after a stop.
    this.p.clock.clearTimer(this.timeout);
    this.abortError = new LeaseholdError(reason, detail ?? `job "${this.p.job.id}" run aborted: ${reason}`);
    this.controller?.abort(this.abortError);
    // A handler that ignores the abort is reported with the abort's outcome after a while.
    this.reportTimer = this.p.clock.setTimer(() => this.reportNow(), REPORT_AFTER_ABORT_MS, true);
    this.wakeBackoff?.();
  }

  /** Which attempt at the tick runs now. */
  get attemptNumber(): number {
    return this.started.attempt;
  }

  /** When the current attempt started. */
  get attemptStartedAt(): number {
    return this.started.startedAt;
  }

  /** Reports the abort's outcome now if not yet reported (shutdown gives up on a stuck handler). */
  reportNow(): void {
    const { final } = this;
    if (final) this.report(final.outcome, final.error, final.cause, false, final.endedAt);
    else if (this.abortedReason) this.report(OUTCOME_OF[this.abortedReason], this.abortError?.message, this.abortError);
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
    return (this.log ??= this.p.logger.child({ jobId: this.p.job.id, runId: this.runId, ...(this.started.attempt > 1 ? { attempt: this.started.attempt } : {}), ...this.hook?.logFields() }));
  }

  private onLeaseLost(loss: LeaseLoss): void {
    const { p } = this;
    this.leaseLost = true;
    this.hook?.event('lease lost', { 'leasehold.lease.loss': loss.cause });
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

  /**
   * Reports the tick's outcome (its last attempt's), once. A leased run whose release did not
   * answer "ours" (its lease was lost, Redis could not be reached, or the report comes before
   * the release) is reported `leaseLost`: a claim may have recorded its token `lost` already.
   */
  private report(outcome: RunOutcome, error: string | undefined, cause: unknown, willRetry = false, endedAt = this.p.now()): void {
    if (this.reported) return;
    this.reported = !willRetry;
    const durationMs = Math.max(0, endedAt - this.started.startedAt);
    const unconfirmed = this.leaseLost || (this.p.lease !== undefined && !this.released);
    const ended = { ...this.started, outcome, endedAt, durationMs, error, cause, willRetry, ...(unconfirmed ? { leaseLost: true } : {}) };
    this.p.emitter.emit('runEnded', ended);
    const { hook } = this;
    this.hook = undefined;
    hook?.end(ended);
  }

  /** One attempt: the handler called once; resolves with what it threw, or undefined on success. */
  private async attempt(): Promise<{ error: unknown } | undefined> {
    try {
      await null; // the handler starts after executeRun has returned, never inside it
      const ctx = new RunContext(this, this.p);
      const { hook } = this;
      await (hook ? hook.call(() => this.p.job.run(ctx)) : this.p.job.run(ctx));
      return undefined;
    } catch (error) {
      return { error };
    } finally {
      this.checkLease();
    }
  }

  /**
   * The wait before another attempt, ms; undefined when no retry is left, or when it would
   * start at or after the job's next tick or the run's timeout.
   */
  private retryDelay(): number | undefined {
    const { p } = this;
    const policy = p.job.retry;
    if (!policy || this.started.attempt >= policy.attempts) return undefined;
    const wait = retryDelayMs(policy, this.started.attempt);
    const at = p.now() + wait;
    if ((p.nextTickAt !== null && at >= p.nextTickAt) || at >= this.startedAt + p.timeoutMs) return undefined;
    return wait;
  }

  /** Waits `ms` before the next attempt; an abort ends the wait at once. */
  private backoff(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.p.clock.setTimer(() => resolve(), ms);
      this.wakeBackoff = () => {
        this.p.clock.clearTimer(timer);
        resolve();
      };
    }).finally(() => (this.wakeBackoff = undefined));
  }

  /** The next attempt at the same tick: a run id of its own, reported as started. */
  private nextAttempt(): void {
    const startedAt = this.p.now();
    this.runId = randomUUID();
    this.log = undefined;
    this.started = { ...this.started, runId: this.runId, startedAt, lagMs: startedAt - this.p.tick, attempt: this.started.attempt + 1 };
    this.hook = this.p.hooks?.begin(this.started);
    this.p.emitter.emit('runStarted', this.started);
  }

  private async settle(): Promise<void> {
    const { p } = this;
    try {
      for (;;) {
        const failure = await this.attempt();
        if (this.abortedReason) {
          this.settleWith(OUTCOME_OF[this.abortedReason], this.abortError?.message, failure?.error ?? this.abortError);
          break;
        }
        if (!failure) {
          this.settleWith('succeeded', undefined, undefined);
          break;
        }
        const wait = this.retryDelay();
        if (wait === undefined) {
          this.settleWith('failed', errorMessage(failure.error), failure.error);
          break;
        }
        this.report('failed', errorMessage(failure.error), failure.error, true);
        await this.backoff(wait);
        if (this.abortedReason) {
          this.settleWith(OUTCOME_OF[this.abortedReason], this.abortError?.message, this.abortError);
          break;
        }
        this.nextAttempt();
      }
      p.clock.clearTimer(this.timeout);
      this.watcher?.stop();
      // A lost lease is never released: another node may hold it now. The outcome is reported
      // after the release, so the record knows whether a claim may have found the run lost.
      if (p.lease && !this.leaseLost) {
        this.released = await p.lease.release(p.delayAfterMs).catch((err: unknown) => {
          // A key of the wrong type is the job's next claim's to say, once (it fails on it too).
          const after = isLeaseholdError(err, ErrorCodes.redisError) ? 'it is sent again until Redis answers or the lease would have expired' : 'it expires on its own';
          p.logger[isLeaseholdError(err, ErrorCodes.corruptState) ? 'debug' : 'warn']({ err, jobId: p.job.id }, 'releasing the lease failed; %s', after);
          return false;
        });
      }
      if (this.reportTimer !== undefined) p.clock.clearTimer(this.reportTimer);
      this.reportNow();
    } catch (err) {
      p.logger.error({ err, jobId: p.job.id }, 'run bookkeeping failed');
    }
  }

  /** Keeps the tick's outcome, reported once the lease is released (or by `reportNow`). */
  private settleWith(outcome: RunOutcome, error: string | undefined, cause: unknown): void {
    this.final ??= { outcome, error, cause, endedAt: this.p.now() };
  }
}
