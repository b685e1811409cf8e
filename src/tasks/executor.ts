/**
 * What every executor offers the tasks layer, its figures, and the small parts the kinds share.
 * @module
 */
import type { RunOutcome } from '../runner/events.js';
import type { ExecutorKind } from '../schedule/submit.js';
import type { ResolvedExecutor } from './config.js';
import type { NormalizedSubmit, NormalizedTask, TaskHandle } from './task.js';

/** An executor's figures: on one node for `loop` and `worker`, BullMQ's counts for a `queue`. */
export interface ExecutorStats {
  /** The executor's name. */
  readonly name: string;
  /** `loop`, `worker` or `queue`. */
  readonly kind: ExecutorKind;
  /** The node these figures are of; absent for a queue (its figures are the cluster's). */
  readonly instanceId?: string;
  /** How many tasks run at once (per node). */
  readonly concurrency: number;
  /** Tasks running now. */
  readonly active: number;
  /** Tasks waiting (delayed ones included). */
  readonly queued: number;
  /** Tasks that succeeded (since the node started; a queue: those kept). */
  readonly succeeded: number;
  /** Tasks that failed (a queue: those kept in its failed set). */
  readonly failed: number;
  /** Tasks aborted by their timeout. */
  readonly timedOut: number;
  /** Tasks cancelled. */
  readonly cancelled: number;
  /** Tasks interrupted by a shutdown. */
  readonly interrupted: number;
}

/** An executor, as the tasks layer drives it. */
export interface TaskExecutor {
  readonly name: string;
  readonly config: ResolvedExecutor;
  /** Accepts a task (in memory, or persisted for a queue); rejects when it cannot. */
  submit(task: NormalizedTask, payload: unknown, opts: NormalizedSubmit): Promise<TaskHandle>;
  /** In-memory executors: accepts a task at once, or throws (what `submit` does, without a promise). */
  accept?(task: NormalizedTask, payload: unknown, opts: NormalizedSubmit): TaskHandle;
  /** Queue executors: starts taking tasks off the queue on this node. */
  consume?(): void;
  /** Cancels a task waiting or running on this node. */
  cancel(taskId: string): boolean;
  /** This executor's figures. */
  stats(): ExecutorStats | Promise<ExecutorStats>;
  /** This node's figures, without a read of Redis (what the board publishes). */
  localStats(): ExecutorStats;
  /** Stops (see SPEC 3.6); resolves with how many tasks were interrupted. */
  close(graceMs: number): Promise<number>;
}

type Counted = 'succeeded' | 'failed' | 'timedOut' | 'cancelled' | 'interrupted';

/** An executor's outcome counters on this node. */
export class Counters {
  private readonly values: Record<Counted, number> = { succeeded: 0, failed: 0, timedOut: 0, cancelled: 0, interrupted: 0 };

  add(outcome: RunOutcome): void {
    if (outcome !== 'lockLost' && outcome !== 'lost') this.values[outcome]++;
  }

  snapshot(): Record<Counted, number> {
    return { ...this.values };
  }
}

/**
 * A submitted task's handle and its result, settled once. The result's promise is made only
 * when someone asks for it (one, however often asked), so a fire-and-forget task's failure is
 * never an unhandled rejection: it is logged and counted instead.
 */
export class SettledHandle implements TaskHandle {
  private settled = false;
  private ok = false;
  private value: unknown;
  private promise: Promise<unknown> | undefined;
  private settle: ((ok: boolean, value: unknown) => void) | undefined;

  constructor(readonly id: string) {}

  result(): Promise<never> {
    if (!this.promise) {
      if (this.settled) this.promise = this.ok ? Promise.resolve(this.value) : Promise.reject(this.value as Error);
      else this.promise = new Promise((resolve, reject) => (this.settle = (ok, value) => (ok ? resolve(value) : reject(value))));
    }
    return this.promise as Promise<never>;
  }

  resolve(value: unknown): void {
    this.end(true, value);
  }

  reject(error: unknown): void {
    this.end(false, error);
  }

  private end(ok: boolean, value: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.ok = ok;
    this.value = value;
    this.settle?.(ok, value);
    this.settle = undefined;
  }
}
