/**
 * One task's attempt on this node: its timeout, its signal and abort reasons, and its outcome
 * reported as a `taskEnded` event. The reasons and outcomes are the runs' (`ABORT_OUTCOMES`):
 * a task times out, is cancelled and is interrupted at a shutdown as a run is. The signal is
 * made when the handler first reads it (as a run's), and an executor may keep its attempts'
 * deadlines on one timer of its own ({@link Deadlines}).
 * @module
 */
import type { Timers, TimerHandle } from '../clock.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage, type AbortReasonCode } from '../errors.js';
import { formatDuration } from '../schedule/duration.js';
import { ABORT_OUTCOMES, type Emitter, type RunOutcome } from '../runner/events.js';
import type { ExecutorKind } from '../schedule/submit.js';
import type { TaskContext } from './task.js';

/** How long after an abort a task that ignores its signal is reported with the abort's outcome (as for runs). */
export const REPORT_AFTER_ABORT_MS = 1_000;

/** What an attempt knows of its task. */
export interface AttemptParams {
  readonly executor: string;
  readonly kind: ExecutorKind;
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
  /** The executor's deadlines; without them the attempt arms a timer of its own. */
  readonly deadlines?: Deadlines;
  /** Called once with how the attempt ended (at the abort's report time for a handler that ignores it). */
  readonly onEnd: (result: AttemptResult) => void;
  /**
   * Called once the handler has settled (or its thread was terminated). For a handler that
   * settled before any abort, it is called after `onEnd` and before the `taskEnded` event, so
   * the slot it frees is used before the event's listeners run: the next task, begun in it
   * within this call, reaches its thread a turn of listeners sooner (docs/benchmarks.md, S6).
   */
  readonly onSettled?: () => void;
}

/** How an attempt ended. */
export type AttemptResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly outcome: RunOutcome; readonly error: unknown };

/**
 * Where an attempt's abort can be heard without an `AbortSignal` (a thread pool forwards it to
 * its thread): the listener is called once, with the abort's error, at once if already aborted.
 */
export interface AbortHook {
  onAbort(listener: (reason: unknown) => void): void;
}

/**
 * The body of an attempt: runs the handler (here, under `ctx.signal`, or in a worker thread,
 * which hears the abort through `hook`).
 */
export type AttemptBody = (ctx: TaskContext, hook: AbortHook) => unknown;

/** The context a handler gets; its signal and logger are made when first read. */
class Context implements TaskContext {
  readonly taskId: string;
  readonly task: string;
  readonly executor: string;
  readonly attempt: number;
  readonly instanceId: string;
  readonly #of: TaskAttempt;

  constructor(of: TaskAttempt, p: AttemptParams) {
    this.#of = of;
    this.taskId = p.taskId;
    this.task = p.task;
    this.executor = p.executor;
    this.attempt = p.attempt;
    this.instanceId = p.instanceId;
  }

  get signal(): AbortSignal {
    return this.#of.signal;
  }

  get log(): Logger {
    return this.#of.logger();
  }
}

/** One attempt of a task on this node. */
export class TaskAttempt implements AbortHook {
  readonly startedAt: number;
  /** When it times out, on the monotonic clock. */
  readonly deadline: number;
  abortedReason: AbortReasonCode | undefined;
  abortError: LeaseholdError | undefined;
  /** Whether the handler has settled. */
  settledNow = false;
  private controller: AbortController | undefined;
  private timeout: TimerHandle | undefined;
  private reportTimer: TimerHandle | undefined;
  private done = false;
  private log: Logger | undefined;
  private abortListener: ((reason: unknown) => void) | undefined;

  /** Arms the attempt's deadline; its handler runs at {@link begin}. */
  constructor(private readonly p: AttemptParams) {
    this.startedAt = p.clock.monotonic();
    this.deadline = this.startedAt + p.timeoutMs;
    if (p.deadlines) p.deadlines.add(this);
    else this.timeout = p.clock.setTimer(() => this.timedOut(), p.timeoutMs);
  }

  /**
   * Runs the handler, within this call: its executor calls it once the attempt is known as the
   * task's (a handler may cancel its own task at once). Nothing waits a microtask before it: that
   * wait, for every task, cost the loop executor about a fifth of its throughput (docs/benchmarks.md, S6).
   */
  begin(body: AttemptBody): void {
    void this.run(body);
  }

  private async run(body: AttemptBody): Promise<void> {
    let result: AttemptResult;
    try {
      result = { ok: true, value: await body(new Context(this, this.p), this) };
    } catch (error) {
      result = { ok: false, outcome: 'failed', error };
    }
    this.settledNow = true;
    const { p } = this;
    if (this.timeout !== undefined) p.clock.clearTimer(this.timeout);
    if (this.reportTimer !== undefined) p.clock.clearTimer(this.reportTimer);
    if (this.abortedReason) {
      this.reportAbort(result.ok ? undefined : result.error);
      p.onSettled?.();
    } else this.finish(result, p.onSettled);
  }

  /** The task's logger, made on first use. */
  logger(): Logger {
    return (this.log ??= this.p.logger.child({ task: this.p.task, taskId: this.p.taskId, executor: this.p.executor, ...(this.p.attempt > 1 ? { attempt: this.p.attempt } : {}) }));
  }

  /** The attempt's signal (what the handler gets as `ctx.signal`), made on first use. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortError) this.controller.abort(this.abortError);
    }
    return this.controller.signal;
  }

  onAbort(listener: (reason: unknown) => void): void {
    if (this.abortError) listener(this.abortError);
    else this.abortListener = listener;
  }

  /** Aborts with reason `timeout`. */
  timedOut(): void {
    this.abort(ErrorCodes.timeout, `task "${this.p.task}" (${this.p.taskId}) timed out after ${formatDuration(this.p.timeoutMs)}`);
  }

  /** Aborts the task's signal (once); the outcome follows the reason. */
  abort(reason: AbortReasonCode, detail?: string): void {
    if (this.abortedReason !== undefined || this.done) return;
    this.abortedReason = reason;
    // Once aborted the deadline has nothing left to do; a handler that ignores the abort must not
    // keep the process alive after a stop.
    if (this.timeout !== undefined) this.p.clock.clearTimer(this.timeout);
    this.p.deadlines?.delete(this);
    this.abortError = new LeaseholdError(reason, detail ?? `task "${this.p.task}" (${this.p.taskId}) aborted: ${reason}`);
    this.controller?.abort(this.abortError);
    this.abortListener?.(this.abortError);
    this.reportTimer = this.p.clock.setTimer(() => this.reportAbort(undefined), REPORT_AFTER_ABORT_MS, true);
  }

  /** Whether the outcome has been reported. */
  get ended(): boolean {
    return this.done;
  }

  /** Reports the abort's outcome now if not yet reported (a shutdown gives up on a stuck handler). */
  reportAbort(cause: unknown): void {
    if (!this.abortedReason) return;
    this.finish({ ok: false, outcome: ABORT_OUTCOMES[this.abortedReason], error: this.abortError ?? cause });
  }

  private finish(result: AttemptResult, settled?: () => void): void {
    if (this.done) return settled?.();
    this.done = true;
    const { p } = this;
    const listens = p.emitter.listens('taskEnded');
    const endedAt = listens ? p.clock.monotonic() : 0;
    p.onEnd(result);
    settled?.();
    if (listens) this.emitEnded(result, endedAt);
  }

  private emitEnded(result: AttemptResult, endedAt: number): void {
    const { p } = this;
    const durationMs = Math.max(0, endedAt - this.startedAt);
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
  }
}

/**
 * The deadlines of an executor's running attempts, on one repeating timer that runs only while
 * attempts run, rather than a timer per task (which a small task cannot afford: see
 * docs/benchmarks.md, S6). An executor runs at most `concurrency` at once, so a check looks at
 * few. A deadline is met to within a tick: a twentieth of the shortest timeout seen, 10 ms to
 * 1 s. The timer lapses at its next tick when no attempt runs, or at {@link Deadlines.stop},
 * rather than being cleared whenever the last attempt ends (small tasks often leave none
 * running for a moment).
 */
export class Deadlines {
  private readonly running = new Set<TaskAttempt>();
  // Not a background timer: like a run's timeout, it keeps the process alive while tasks run.
  private timer: TimerHandle | undefined;
  private tickMs = 1_000;

  constructor(private readonly clock: Timers) {}

  add(attempt: TaskAttempt): void {
    this.running.add(attempt);
    const tick = Math.max(10, Math.min(1_000, Math.floor((attempt.deadline - attempt.startedAt) / 20)));
    if (tick < this.tickMs) {
      this.tickMs = tick;
      this.stop();
    }
    if (this.timer === undefined) this.arm();
  }

  delete(attempt: TaskAttempt): void {
    this.running.delete(attempt);
  }

  /** Clears the timer (the executor has stopped). */
  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      const now = this.clock.monotonic();
      for (const attempt of this.running) if (now >= attempt.deadline) attempt.timedOut();
      if (this.running.size > 0) this.arm();
    }, this.tickMs);
  }
}
