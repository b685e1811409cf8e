/**
 * One task's attempt on this node: its timeout, its signal and abort reasons, and its outcome
 * reported as a `taskEnded` event. The reasons and outcomes are the runs' (`ABORT_OUTCOMES`):
 * a task times out, is cancelled and is interrupted at a shutdown as a run is.
 * @module
 */
import type { Timers, TimerHandle } from '../clock.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage, type AbortReasonCode } from '../errors.js';
import { formatDuration } from '../schedule/duration.js';
import { ABORT_OUTCOMES, type Emitter, type RunOutcome } from '../runner/events.js';
import type { TaskContext } from './task.js';

/** How long after an abort a task that ignores its signal is reported with the abort's outcome (as for runs). */
export const REPORT_AFTER_ABORT_MS = 1_000;

/** What an attempt knows of its task. */
export interface AttemptParams {
  readonly executor: string;
  readonly kind: string;
  readonly task: string;
  readonly taskId: string;
  readonly attempt: number;
  readonly instanceId: string;
  readonly timeoutMs: number;
  readonly clock: Timers;
  readonly logger: Logger;
  readonly emitter: Emitter;
  /** Whether a failure will be tried again (queue executors); decides the event's `willRetry`. */
  readonly willRetry?: (error: unknown) => boolean;
}

/** How an attempt ended. */
export type AttemptResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly outcome: RunOutcome; readonly error: unknown };

/** The body of an attempt: runs the handler (here or in a worker thread) under `ctx.signal`. */
export type AttemptBody = (ctx: TaskContext, attempt: TaskAttempt) => Promise<unknown>;

/** One attempt of a task on this node. */
export class TaskAttempt {
  readonly startedAt: number;
  abortedReason: AbortReasonCode | undefined;
  abortError: LeaseholdError | undefined;
  /** Resolves once with how the attempt ended (at the abort's report time for a handler that ignores it). */
  readonly ended: Promise<AttemptResult>;
  /** Resolves when the handler has settled (or its thread was terminated). Never rejects. */
  readonly settled: Promise<void>;
  private readonly controller = new AbortController();
  private readonly timeout: TimerHandle;
  private reportTimer: TimerHandle | undefined;
  private resolveEnded!: (r: AttemptResult) => void;
  private done = false;
  private log: Logger | undefined;

  constructor(
    private readonly p: AttemptParams,
    body: AttemptBody,
  ) {
    this.startedAt = p.clock.monotonic();
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    this.timeout = p.clock.setTimer(() => this.abort(ErrorCodes.timeout, `task "${p.task}" (${p.taskId}) timed out after ${formatDuration(p.timeoutMs)}`), p.timeoutMs);
    const logger = (): Logger => this.logger();
    const ctx: TaskContext = {
      signal: this.controller.signal,
      get log() {
        return logger();
      },
      taskId: p.taskId,
      task: p.task,
      executor: p.executor,
      attempt: p.attempt,
      instanceId: p.instanceId,
    };
    this.settled = (async () => {
      let result: AttemptResult;
      try {
        await null; // the handler starts after the attempt is made, never inside its constructor
        result = { ok: true, value: await body(ctx, this) };
      } catch (error) {
        result = { ok: false, outcome: 'failed', error };
      }
      p.clock.clearTimer(this.timeout);
      if (this.reportTimer !== undefined) p.clock.clearTimer(this.reportTimer);
      if (this.abortedReason) this.reportAbort(result.ok ? undefined : result.error);
      else this.finish(result);
    })();
  }

  /** The task's logger, made on first use. */
  logger(): Logger {
    return (this.log ??= this.p.logger.child({ task: this.p.task, taskId: this.p.taskId, executor: this.p.executor, ...(this.p.attempt > 1 ? { attempt: this.p.attempt } : {}) }));
  }

  /** The attempt's signal (what the handler gets as `ctx.signal`). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Aborts the task's signal (once); the outcome follows the reason. */
  abort(reason: AbortReasonCode, detail?: string): void {
    if (this.abortedReason !== undefined || this.done) return;
    this.abortedReason = reason;
    this.p.clock.clearTimer(this.timeout);
    this.abortError = new LeaseholdError(reason, detail ?? `task "${this.p.task}" (${this.p.taskId}) aborted: ${reason}`);
    this.controller.abort(this.abortError);
    this.reportTimer = this.p.clock.setTimer(() => this.reportAbort(undefined), REPORT_AFTER_ABORT_MS, true);
  }

  /** Reports the abort's outcome now if not yet reported (a shutdown gives up on a stuck handler). */
  reportAbort(cause: unknown): void {
    if (!this.abortedReason) return;
    this.finish({ ok: false, outcome: ABORT_OUTCOMES[this.abortedReason], error: this.abortError ?? cause });
  }

  private finish(result: AttemptResult): void {
    if (this.done) return;
    this.done = true;
    const { p } = this;
    const durationMs = Math.max(0, p.clock.monotonic() - this.startedAt);
    const error = result.ok ? undefined : result.error;
    const willRetry = !result.ok && result.outcome === 'failed' && (p.willRetry?.(error) ?? false);
    p.emitter.emit('taskEnded', {
      executor: p.executor,
      kind: p.kind,
      task: p.task,
      taskId: p.taskId,
      instanceId: p.instanceId,
      outcome: result.ok ? 'succeeded' : result.outcome,
      attempt: p.attempt,
      durationMs,
      error: result.ok ? undefined : errorMessage(error),
      cause: error,
      willRetry,
    });
    this.resolveEnded(result);
  }
}
