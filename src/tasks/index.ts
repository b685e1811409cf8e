/**
 * The tasks layer: the tasks registered on a node, its executors (made on first use, by the
 * kind configured for their name), submissions, the figures of every executor, and the
 * shutdown of them all. It reports through the runner's events (`taskEnded`), as runs do.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage, leaseholdError } from '../errors.js';
import type { JobContext } from '../schedule/job.js';
import { limitsKey, type WorkerResourceLimits } from '../schedule/limits.js';
import { checkExecutorPeer, type ExecutorSet, type ResolvedExecutor } from './config.js';
import type { ExecutorStats, TaskExecutor } from './executor.js';
import { LocalExecutor, type ExecutorHost } from './local.js';
import { ThreadPool } from './pool.js';
import type { AbortHook } from './execution.js';
import type { ExecutorBoard } from './board.js';
import { withTaskHook, type TaskStart } from './hooks.js';
import { callTask } from './call.js';
import { normalizeSubmit, normalizeTask, type NormalizedSubmit, type NormalizedTask, type TaskContext, type TaskDefinition, type TaskHandle } from './task.js';

export { defineTask, DEFAULT_EXECUTOR, type TaskDefinition, type TaskContext, type TaskHandler, type TaskHandle, type SubmitOptions } from './task.js';
export { EXECUTOR_ENV_DOCS, OTHER_EXECUTORS, checkTaskDefinitions, ignoredFieldsMessage, resolveExecutors, type ExecutorConfig, type ExecutorSet, type IgnoredExecutorFields, type ResolvedExecutor } from './config.js';
export type { ExecutorStats } from './executor.js';
export { ExecutorBoard, mergeQueues, readBoard } from './board.js';
export { queueExecutor } from './lazy-queue.js';
export { withThread } from './jobs.js';
export { isWorkerThread } from './thread.js';
export type { TaskHooks, TaskHook, TaskOrigin, TaskStart } from './hooks.js';

/** Makes a queue executor (with Redis); see `queue.ts`. */
export type QueueFactory = (config: ResolvedExecutor, host: ExecutorHost, tasks: (id: string) => NormalizedTask | undefined) => TaskExecutor;

/** What the tasks layer needs. */
export interface TasksOptions extends ExecutorHost {
  /** The executors configured (checked). */
  readonly executors: ExecutorSet;
  /** Makes queue executors; without it (no Redis) a queue executor is refused. */
  readonly queue?: QueueFactory;
  /** The executors' board in Redis, for the cluster's figures; without it (no Redis) only this node's. */
  readonly board?: ExecutorBoard;
  /** The key prefix (for the queues' counts). */
  readonly prefix?: string;
}

/** A node's tasks and executors. */
export class Tasks {
  private readonly registered = new Map<string, NormalizedTask>();
  private readonly seen = new WeakMap<object, NormalizedTask>();
  private readonly made = new Map<string, TaskExecutor>();
  /** The threads of jobs with `thread: 'worker'`, a pool per set of limits. */
  private readonly jobPools = new Map<string, ThreadPool>();
  private accepting = true;
  private consuming = false;

  constructor(private readonly opts: TasksOptions) {}

  /**
   * The configuration of the executor `name`, which the task `task` names.
   * @throws LeaseholdError `unknownExecutor` when it is not configured (and no catch-all is).
   */
  config(name: string, task = '?'): ResolvedExecutor {
    return this.opts.executors.of(name, task);
  }

  /**
   * Registers a task on this node, so it runs here when submitted by id, and (for a queue
   * executor) this node consumes that executor's queue.
   */
  add(definition: TaskDefinition<never, unknown> | TaskDefinition): NormalizedTask {
    if (!this.accepting) throw new LeaseholdError(ErrorCodes.invalidState, 'cannot add a task to a runner that is stopping or stopped');
    const task = this.check(definition);
    if (this.registered.has(task.id)) throw leaseholdError(ErrorCodes.duplicateTask, { task: JSON.stringify(task.id) });
    this.registered.set(task.id, task);
    if (this.consuming && this.config(task.executor).kind === 'queue') this.executor(this.config(task.executor)).consume?.();
    return task;
  }

  /** Unregisters a task (a renamed `@Async` method's): submits by its id are refused from now on. */
  remove(id: string): boolean {
    return this.registered.delete(id);
  }

  /** The registered tasks' ids. */
  ids(): string[] {
    return [...this.registered.keys()];
  }

  /**
   * Submits a task (a definition, or the id of one registered here). An in-memory executor
   * accepts it at once: the promise is of a handle already made, with no further step.
   */
  submit(taskOrId: TaskDefinition<never, unknown> | TaskDefinition | string, payload: unknown, options?: unknown): Promise<TaskHandle> {
    try {
      const { executor, task, opts } = this.prepare(taskOrId, payload, options);
      return executor.accept ? Promise.resolve(executor.accept(task, payload, opts)) : executor.submit(task, payload, opts);
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /** One call of an `@Async` method, whose result its caller may ignore: see `call.ts`. */
  call(id: string, payload: unknown): Promise<unknown> {
    const executor = (): ResolvedExecutor | undefined => {
      const task = this.registered.get(id);
      return task && this.config(task.executor);
    };
    return callTask({ host: this.opts, submit: () => this.submit(id, payload), executor }, id);
  }

  /** A submission checked: its executor, its task (with the submitter's trace context) and options. */
  private prepare(taskOrId: TaskDefinition<never, unknown> | TaskDefinition | string, payload: unknown, options: unknown): { executor: TaskExecutor; task: NormalizedTask; opts: NormalizedSubmit } {
    let task: NormalizedTask;
    if (typeof taskOrId === 'string') {
      const found = this.registered.get(taskOrId);
      if (!found) throw new LeaseholdError(ErrorCodes.unknownTask, `submit: no task ${JSON.stringify(taskOrId)} is registered on this node (runner.addTask, or submit the definition itself)`);
      task = found;
    } else {
      const registered = this.registered.get((taskOrId as { id?: unknown }).id as string);
      task = registered?.definition === taskOrId ? registered : this.checked(taskOrId);
    }
    const opts = normalizeSubmit(task.id, options);
    const config = this.config(task.executor);
    if (!this.accepting) throw new LeaseholdError(ErrorCodes.shutdown, `the runner is stopping or stopped: task "${task.id}" not accepted by executor "${config.name}"`);
    if (config.kind !== 'queue' && (opts.attempts !== undefined || opts.backoffMs !== undefined)) {
      throw new LeaseholdError(ErrorCodes.invalidTask, `submit "${task.id}": options "attempts" and "backoff" apply to queue executors only; executor "${config.name}" is a ${config.kind} executor`);
    }
    if (config.kind === 'worker' && !isPrimitive(payload)) {
      try {
        structuredClone(payload);
      } catch (err) {
        throw leaseholdError(ErrorCodes.invalidPayload, { task: JSON.stringify(task.id), kind: 'worker', executor: JSON.stringify(config.name), how: 'passed to a worker thread', problem: errorMessage(err) });
      }
    }
    // The submitter's trace context, carried by this submission (to a queue, to another node).
    const origin = this.opts.hooks?.capture();
    return { executor: this.executor(config), task: origin ? { ...task, origin } : task, opts };
  }

  /** Cancels a task waiting or running on this node. False when none has the id. */
  cancel(taskId: string): boolean {
    for (const executor of this.made.values()) if (executor.cancel(taskId)) return true;
    return false;
  }

  /**
   * The cluster's executors: a row per node for loop and worker executors (from the board in
   * Redis), and a queue executor's counts from its queue (those this node knows).
   */
  async clusterStats(): Promise<ExecutorStats[]> {
    const board = this.opts.board;
    if (!board) return this.stats();
    return board.read(this.localStats(true), this.opts.prefix ?? '');
  }

  /** Every executor's figures on this node: those made, and those configured but not used yet. */
  async stats(): Promise<ExecutorStats[]> {
    const names = new Set([...this.opts.executors.named.keys(), ...this.made.keys()]);
    return Promise.all(
      [...names].sort().map(async (name) => {
        const made = this.made.get(name);
        if (made) return made.stats();
        const c = this.config(name);
        return { name, kind: c.kind, ...(c.kind === 'queue' ? {} : { instanceId: this.opts.instanceId }), concurrency: c.concurrency, active: 0, queued: 0, succeeded: 0, failed: 0, timedOut: 0, cancelled: 0, interrupted: 0 };
      }),
    );
  }

  /**
   * This node's figures without a read of Redis (what it publishes on the board): the executors
   * it made, and with `configured` those configured but unused, at zero.
   */
  localStats(configured = false): ExecutorStats[] {
    const names = new Set([...(configured ? this.opts.executors.named.keys() : []), ...this.made.keys()]);
    return [...names].sort().map((name) => {
      const made = this.made.get(name);
      if (made) return { ...made.localStats(), ...(made.config.kind === 'queue' ? {} : { instanceId: this.opts.instanceId }) };
      const c = this.config(name);
      return { name, kind: c.kind, instanceId: this.opts.instanceId, concurrency: c.concurrency, active: 0, queued: 0, succeeded: 0, failed: 0, timedOut: 0, cancelled: 0, interrupted: 0 };
    });
  }

  /** Makes the queue executors of the registered tasks, so this node consumes their queues. */
  startConsumers(): void {
    this.consuming = true;
    for (const task of this.registered.values()) {
      const config = this.config(task.executor);
      if (config.kind === 'queue') this.executor(config).consume?.();
    }
  }

  /**
   * Runs a job's handler in a worker thread (`thread: 'worker'`): `module` exports the job. Its
   * signal is the run's: a timeout, lease loss, cancel or shutdown aborts the handler in the
   * thread, and the thread is terminated after a short grace.
   */
  runJob(jobId: string, module: string, ctx: JobContext, resourceLimits?: WorkerResourceLimits): Promise<unknown> {
    const key = limitsKey(resourceLimits);
    let pool = this.jobPools.get(key);
    if (!pool) {
      // One thread per worker job at most: a job never overlaps itself.
      pool = new ThreadPool({ name: 'jobs', maxThreads: 1_000, idleTimeoutMs: 60_000, clock: this.opts.clock, logger: this.opts.logger, resourceLimits });
      this.jobPools.set(key, pool);
    }
    const fields = { jobId: ctx.jobId, runId: ctx.runId, scheduledAt: ctx.scheduledAt, startedAt: ctx.startedAt, instanceId: ctx.instanceId, attempt: ctx.attempt, fencingToken: ctx.fencingToken };
    const { signal } = ctx;
    const hook: AbortHook = { onAbort: (listener) => (signal.aborted ? listener(signal.reason) : signal.addEventListener('abort', () => listener(signal.reason), { once: true })) };
    return pool.run({ kind: 'job', module, id: jobId, ctx: fields }, hook);
  }

  /** Stops accepting tasks (before the runner's timer stops, so nothing new starts). */
  closeIntake(): void {
    this.accepting = false;
  }

  /**
   * Ends every executor (SPEC 3.6): none accepts more; each gives its tasks the grace, then
   * interrupts the rest, reported in one line per executor. The job threads end once the runs
   * have (`runsEnded`: the runner's stop, which gives them the same grace, then aborts the rest,
   * whose threads are terminated and the runs recorded `interrupted`).
   */
  async stop(graceMs: number, runsEnded: Promise<unknown> = Promise.resolve()): Promise<void> {
    this.accepting = false;
    await Promise.all(
      [...this.made.values()].map(async (executor) => {
        const interrupted = await executor.close(graceMs).catch((err: unknown) => {
          this.opts.logger.error({ err, executor: executor.name }, 'executor "%s" did not stop cleanly', executor.name);
          return 0;
        });
        if (interrupted > 0) this.opts.logger.warn({ executor: executor.name, interrupted }, 'executor "%s": %d task(s) interrupted by the shutdown', executor.name, interrupted);
      }),
    );
    try {
      await runsEnded;
    } finally {
      await Promise.all([...this.jobPools.values()].map((pool) => pool.close()));
    }
    await this.opts.board?.stop();
  }

  /** A definition submitted without being registered, checked once. */
  private checked(definition: object): NormalizedTask {
    let task = this.seen.get(definition);
    if (!task) {
      task = this.check(definition);
      this.seen.set(definition, task);
    }
    return task;
  }

  /** Checks a task definition as `add` does, against this node's executors. */
  check(definition: unknown): NormalizedTask {
    const task = normalizeTask(definition);
    const config = this.config(task.executor, task.id);
    checkExecutorPeer(config);
    if (config.kind === 'queue' && !this.opts.queue) throw leaseholdError(ErrorCodes.redisRequired, { what: `task ${JSON.stringify(task.id)}: the queue executor ${JSON.stringify(config.name)}`, alternative: ', or use a loop or worker executor' });
    if (config.kind === 'worker' && task.module === undefined) throw leaseholdError(ErrorCodes.invalidTask, { task: JSON.stringify(task.id), field: 'module', problem: `executor "${config.name}" runs tasks in worker threads, which load the task from its module: give module: import.meta.url` });
    return task;
  }

  private executor(config: ResolvedExecutor): TaskExecutor {
    const existing = this.made.get(config.name);
    if (existing) return existing;
    let executor: TaskExecutor;
    const host: ExecutorHost = this.opts;
    if (config.kind === 'loop') {
      executor = new LocalExecutor(config, host, (task, payload, ctx) => withTaskHook(host.hooks, start(task, ctx, config.kind), () => task.run(payload, ctx)));
    } else if (config.kind === 'worker') {
      const pool = new ThreadPool({ name: config.name, maxThreads: config.concurrency, idleTimeoutMs: config.idleTimeoutMs, clock: host.clock, logger: host.logger, resourceLimits: config.resourceLimits, ctx: { executor: config.name, instanceId: this.opts.instanceId } });
      executor = new LocalExecutor(
        config,
        host,
        (task, payload, ctx, hook) => {
          // The executor and the node go to each thread once, with the pool (ThreadData).
          const fields = { taskId: ctx.taskId, task: ctx.task, attempt: ctx.attempt };
          // The abort reaches the thread through the hook: no AbortSignal is made for a task that is not aborted.
          return withTaskHook(host.hooks, start(task, ctx, config.kind), () => pool.run({ kind: 'task', module: task.module ?? '', id: task.id, payload, ctx: fields }, hook));
        },
        () => pool.close(),
      );
    } else {
      const make = this.opts.queue;
      if (!make) throw leaseholdError(ErrorCodes.redisRequired, { what: `the queue executor ${JSON.stringify(config.name)}`, alternative: ', or use a loop or worker executor' });
      executor = make(config, host, (id) => this.registered.get(id));
    }
    this.made.set(config.name, executor);
    this.opts.board?.start();
    return executor;
  }
}

/** What the hooks are told of an attempt on this node. */
function start(task: NormalizedTask, ctx: TaskContext, kind: string): TaskStart {
  return { task: task.id, taskId: ctx.taskId, executor: ctx.executor, kind, instanceId: ctx.instanceId, attempt: ctx.attempt, origin: task.origin };
}

/** A value that a worker thread always receives as is (every primitive but a symbol clones). */
function isPrimitive(value: unknown): boolean {
  return value === null || (typeof value !== 'object' && typeof value !== 'function' && typeof value !== 'symbol');
}
