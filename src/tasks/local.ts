/**
 * An in-process executor: a FIFO queue (with an optional limit) in front of a bounded number
 * of slots, on the event loop (`loop`) or on worker threads (`worker`, whose body hands each
 * task to the thread pool). Deduplication ids, delays, cancel and the shutdown of SPEC 3.6.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { waitAtMost, type Timers, type TimerHandle } from '../clock.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, leaseholdError } from '../errors.js';
import type { Emitter } from '../runner/events.js';
import type { ResolvedExecutor } from './config.js';
import type { TaskHooks } from './hooks.js';
import { Deadlines, TaskAttempt, type AbortHook, type AttemptResult } from './execution.js';
import { Counters, SettledHandle, type ExecutorStats, type TaskExecutor } from './executor.js';
import type { NormalizedSubmit, NormalizedTask, TaskContext, TaskHandle } from './task.js';

/** What an executor needs from the node. */
export interface ExecutorHost {
  readonly instanceId: string;
  readonly clock: Timers;
  readonly logger: Logger;
  readonly emitter: Emitter;
  /** What is done around each task (its span), if anything. */
  readonly hooks?: TaskHooks;
}

/** Runs one task's handler: here under `ctx.signal`, or in a worker thread told of the abort through `hook`. */
export type LocalBody = (task: NormalizedTask, payload: unknown, ctx: TaskContext, hook: AbortHook) => unknown;

interface Entry {
  readonly taskId: string;
  readonly task: NormalizedTask;
  readonly payload: unknown;
  readonly timeoutMs: number;
  readonly handle: SettledHandle;
  delay: TimerHandle | undefined;
  attempt: TaskAttempt | undefined;
  cancelled: boolean;
}

/** A `loop` or `worker` executor. */
export class LocalExecutor implements TaskExecutor {
  private readonly queue: (Entry | undefined)[] = [];
  private head = 0;
  private readonly running = new Set<Entry>();
  private readonly delayed = new Set<Entry>();
  private readonly byId = new Map<string, Entry>();
  private readonly counters = new Counters();
  private readonly deadlines: Deadlines;
  /** Task ids made here: a random prefix of this executor and a sequence number, not a UUID per task (docs/benchmarks.md, S6). */
  private readonly idPrefix = randomBytes(8).toString('hex');
  private idSeq = 0;
  private accepting = true;
  /** After the grace: nothing more starts. */
  private closed = false;

  constructor(
    readonly config: ResolvedExecutor,
    private readonly host: ExecutorHost,
    private readonly body: LocalBody,
    private readonly onClose: () => Promise<void> = async () => {},
  ) {
    this.deadlines = new Deadlines(host.clock);
  }

  get name(): string {
    return this.config.name;
  }

  /** Tasks waiting for a slot (delayed ones included). */
  get queued(): number {
    return this.queue.length - this.head + this.delayed.size;
  }

  submit(task: NormalizedTask, payload: unknown, opts: NormalizedSubmit): Promise<TaskHandle> {
    return Promise.resolve(this.accept(task, payload, opts));
  }

  /** Accepts a task at once (in memory), or throws. */
  accept(task: NormalizedTask, payload: unknown, opts: NormalizedSubmit): TaskHandle {
    const { config } = this;
    if (!this.accepting) throw new LeaseholdError(ErrorCodes.shutdown, `executor "${config.name}" is shutting down: task "${task.id}" not accepted`);
    if (opts.id !== undefined) {
      const same = this.byId.get(opts.id);
      if (same) return same.handle;
    }
    if (this.queued >= config.queueLimit) {
      throw leaseholdError(ErrorCodes.queueFull, { executor: JSON.stringify(config.name), task: JSON.stringify(task.id), queued: this.queued, limit: config.queueLimit });
    }
    const taskId = opts.id ?? `${this.idPrefix}-${++this.idSeq}`;
    const entry: Entry = {
      taskId,
      task,
      payload,
      timeoutMs: opts.timeoutMs ?? task.timeoutMs ?? config.timeoutMs,
      handle: new SettledHandle(taskId),
      delay: undefined,
      attempt: undefined,
      cancelled: false,
    };
    this.byId.set(taskId, entry);
    if (opts.delayMs > 0) {
      this.delayed.add(entry);
      entry.delay = this.host.clock.setTimer(() => {
        this.delayed.delete(entry);
        entry.delay = undefined;
        this.enqueue(entry);
      }, opts.delayMs);
    } else this.enqueue(entry);
    return entry.handle;
  }

  /** Cancels a task waiting or running here: it ends `cancelled`. False when none has the id. */
  cancel(taskId: string): boolean {
    const entry = this.byId.get(taskId);
    if (!entry || entry.cancelled) return false;
    entry.cancelled = true;
    if (entry.attempt) {
      entry.attempt.abort(ErrorCodes.cancelled, `task "${entry.task.id}" (${taskId}) cancelled`);
      return true;
    }
    this.drop(entry, ErrorCodes.cancelled, `task "${entry.task.id}" (${taskId}) cancelled before it started`);
    return true;
  }

  localStats(): ExecutorStats {
    return this.stats();
  }

  stats(): ExecutorStats {
    const { config } = this;
    return { name: config.name, kind: config.kind, instanceId: this.host.instanceId, concurrency: config.concurrency, active: this.running.size, queued: this.queued, ...this.counters.snapshot() };
  }

  /**
   * Stops: no task is accepted; waiting and running tasks get up to the grace, then those still
   * running are aborted (`shutdown`), given a moment, and reported `interrupted`, and those still
   * waiting are dropped as `interrupted`. Returns how many were interrupted.
   */
  async close(graceMs: number): Promise<number> {
    this.accepting = false;
    const { clock } = this.host;
    for (const entry of [...this.delayed]) this.drop(entry, ErrorCodes.shutdown, `task "${entry.task.id}" (${entry.taskId}) did not start before the shutdown`);
    const idle = (): Promise<void> => new Promise((resolve) => (this.onIdle = resolve));
    if (this.running.size > 0 || this.queued > 0) await waitAtMost(clock, idle(), graceMs);
    this.closed = true;
    let interrupted = 0;
    while (this.head < this.queue.length) {
      const entry = this.queue[this.head++];
      if (entry && !entry.cancelled) {
        interrupted++;
        this.drop(entry, ErrorCodes.shutdown, `task "${entry.task.id}" (${entry.taskId}) did not start before the shutdown`);
      }
    }
    const running = [...this.running];
    interrupted += running.length;
    for (const entry of running) entry.attempt?.abort(ErrorCodes.shutdown, `task "${entry.task.id}" (${entry.taskId}) interrupted by the shutdown`);
    if (running.length > 0) await waitAtMost(clock, new Promise<void>((resolve) => (this.onIdle = resolve)), 1_000);
    for (const entry of running) entry.attempt?.reportAbort(undefined);
    this.deadlines.stop();
    await this.onClose();
    return interrupted;
  }

  private onIdle: (() => void) | undefined;

  private enqueue(entry: Entry): void {
    this.queue.push(entry);
    this.pump();
  }

  /** Starts waiting tasks while slots are free. */
  private pump(): void {
    while (!this.closed && this.running.size < this.config.concurrency && this.head < this.queue.length) {
      const entry = this.queue[this.head];
      this.queue[this.head++] = undefined;
      if (entry && !entry.cancelled) this.start(entry);
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    if (this.running.size === 0 && this.queued === 0) this.onIdle?.();
  }

  private start(entry: Entry): void {
    const { host, config } = this;
    this.running.add(entry);
    const attempt = new TaskAttempt({
      executor: config.name,
      kind: config.kind,
      task: entry.task.id,
      taskId: entry.taskId,
      attempt: 1,
      instanceId: host.instanceId,
      timeoutMs: entry.timeoutMs,
      clock: host.clock,
      logger: host.logger,
      emitter: host.emitter,
      deadlines: this.deadlines,
      onEnd: (r) => this.settle(entry, r),
      onSettled: () => {
        this.deadlines.delete(attempt);
        this.running.delete(entry);
        if (this.byId.get(entry.taskId) === entry) this.byId.delete(entry.taskId);
        this.pump();
      },
    });
    // Known as the entry's before its handler runs: a handler may cancel its own task at once.
    entry.attempt = attempt;
    attempt.begin((ctx, hook) => this.body(entry.task, entry.payload, ctx, hook));
  }

  private settle(entry: Entry, r: AttemptResult): void {
    this.counters.add(r.ok ? 'succeeded' : r.outcome);
    if (r.ok) entry.handle.resolve(r.value);
    else entry.handle.reject(r.error);
  }

  /** Ends a task that never started, with an abort's outcome. */
  private drop(entry: Entry, reason: typeof ErrorCodes.shutdown | typeof ErrorCodes.cancelled, message: string): void {
    entry.cancelled = true;
    if (entry.delay !== undefined) this.host.clock.clearTimer(entry.delay);
    this.delayed.delete(entry);
    if (this.byId.get(entry.taskId) === entry) this.byId.delete(entry.taskId);
    const outcome = reason === ErrorCodes.shutdown ? 'interrupted' : 'cancelled';
    this.counters.add(outcome);
    const error = new LeaseholdError(reason, message);
    const { config, host } = this;
    host.emitter.emit('taskEnded', { executor: config.name, kind: config.kind, task: entry.task.id, taskId: entry.taskId, instanceId: host.instanceId, outcome, attempt: 1, durationMs: 0, error: message, cause: error, willRetry: false });
    entry.handle.reject(error);
    this.pump();
  }
}
