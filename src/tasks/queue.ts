/**
 * Queue executors: durable and cluster-wide, on BullMQ queues. A task submitted on any node is
 * persisted, then run by whichever node has it registered and a free slot; attempts with
 * backoff; failed tasks kept (bounded) and visible; delivery at least once (a node killed
 * mid-task has its task run again elsewhere once its lock expires). BullMQ's connections are
 * its own, apart from the lease's; its prefix carries a hash tag per queue, for Redis Cluster.
 * @module
 */
import { randomUUID } from 'node:crypto';
import { Queue, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import { waitAtMost } from '../clock.js';
import { ErrorCodes, LeaseholdError, errorMessage, leaseholdError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { keys } from '../redis/keys.js';
import type { ResolvedExecutor } from './config.js';
import type { QueueFactory } from './index.js';
import { TaskAttempt, type AttemptResult } from './execution.js';
import { Counters, type ExecutorStats, type TaskExecutor } from './executor.js';
import type { ExecutorHost } from './local.js';
import { withTaskHook, type TaskOrigin } from './hooks.js';
import { countsOf, queuePrefix } from './queue-counts.js';
import { ResultWaits } from './queue-results.js';
import type { NormalizedSubmit, NormalizedTask, TaskHandle } from './task.js';

/**
 * Makes a connection (a `queue` one) for the BullMQ objects of the executor `executor`; the
 * executor closes the connections it was given, within its bounded close.
 */
export type QueueConnect = (executor: string) => RedisClient;

/** What a queued task carries. */
interface QueuedData {
  /** The payload (JSON). */
  readonly p: unknown;
  /** The timeout, ms. */
  readonly t: number;
  /** The submitter's trace context (W3C headers), if any. */
  readonly c?: TaskOrigin;
}

/** Makes queue executors on the runner's Redis, with connections of their own. */
export function queueExecutor(connect: QueueConnect, prefix: string): QueueFactory {
  return (config, host, lookup) => new QueueExecutor(config, host, lookup, connect, prefix);
}

/** A `queue` executor. Its Queue is made on the first submit, its Worker when this node registers one of its tasks. */
class QueueExecutor implements TaskExecutor {
  private queue: Queue | undefined;
  private worker: Worker | undefined;
  private readonly connections: RedisClient[] = [];
  private readonly running = new Map<string, { attempt: TaskAttempt; job: Job; token: string | undefined }>();
  private readonly results: ResultWaits;
  private readonly counters = new Counters();
  private accepting = true;
  private readonly queueName: string;

  constructor(
    readonly config: ResolvedExecutor,
    private readonly host: ExecutorHost,
    private readonly lookup: (id: string) => NormalizedTask | undefined,
    private readonly connect: QueueConnect,
    private readonly prefix: string,
  ) {
    this.queueName = `{${config.name}}`;
    this.results = new ResultWaits({
      executor: config.name,
      queueName: this.queueName,
      prefix,
      clock: host.clock,
      logger: host.logger,
      queue: () => this.getQueue(),
      connection: () => this.connection(),
      accepting: () => this.accepting,
    });
  }

  get name(): string {
    return this.config.name;
  }

  private connection(): RedisClient {
    const c = this.connect(this.config.name);
    this.connections.push(c);
    return c;
  }

  private getQueue(): Queue {
    if (this.queue) return this.queue;
    const connection = this.connection();
    this.queue = new Queue(this.queueName, { connection, prefix: queuePrefix(this.prefix) });
    this.noteQueue = () => {
      // Named (once) where the executors view finds it while no live node consumes the queue.
      this.noteQueue = undefined;
      const { name } = this.config;
      connection.sadd(keys(this.prefix).queues, name).catch((err: unknown) => this.host.logger.debug({ error: errorMessage(err), executor: name }, 'noting queue "%s" for the executors view failed; it shows there while a node consumes it', name));
    };
    return this.queue;
  }

  /** Set with the queue, until the first task is on it. */
  private noteQueue: (() => void) | undefined;

  /** Starts taking tasks off the queue on this node (once). */
  consume(): void {
    const { config } = this;
    if (this.worker || !this.accepting) return;
    this.worker = new Worker(this.queueName, (job: Job, token?: string) => this.process(job, token), {
      connection: this.connection(),
      prefix: queuePrefix(this.prefix),
      concurrency: config.concurrency,
      lockDuration: config.leaseMs,
      stalledInterval: Math.max(1_000, Math.floor(config.leaseMs / 2)),
      maxStalledCount: 1,
    });
    this.worker.on('error', (err: Error) => this.host.logger.warn({ err: { message: err.message }, executor: config.name }, 'executor "%s": the queue worker failed: %s', config.name, err.message));
  }

  async submit(task: NormalizedTask, payload: unknown, opts: NormalizedSubmit): Promise<TaskHandle> {
    const { config } = this;
    if (!this.accepting) throw new LeaseholdError(ErrorCodes.shutdown, `executor "${config.name}" is shutting down: task "${task.id}" not accepted`);
    let json: string | undefined;
    try {
      json = JSON.stringify(payload);
    } catch (err) {
      throw leaseholdError(ErrorCodes.invalidPayload, { task: JSON.stringify(task.id), kind: 'queue', executor: JSON.stringify(config.name), how: 'serialised as JSON', problem: errorMessage(err) });
    }
    const data: QueuedData = { p: json === undefined ? null : (JSON.parse(json) as unknown), t: opts.timeoutMs ?? task.timeoutMs ?? config.timeoutMs, ...(task.origin ? { c: task.origin } : {}) };
    const attempts = opts.attempts ?? config.attempts;
    const job = await this.getQueue()
      .add(task.id, data, {
        // An id of our own when none is given: the same kind of id as on the other executors, and one
        // that a later submit (on any node) can name to reach the same task.
        jobId: opts.id ?? randomUUID(),
        ...(opts.delayMs > 0 ? { delay: opts.delayMs } : {}),
        attempts,
        backoff: { type: 'exponential', delay: opts.backoffMs ?? config.backoffMs },
        removeOnComplete: { count: config.keepCompleted },
        removeOnFail: { count: config.keepFailed },
      })
      .catch((err: unknown) => {
        throw new LeaseholdError(ErrorCodes.redisError, `task "${task.id}" on queue executor "${config.name}" not accepted: ${errorMessage(err)}`, { cause: err });
      });
    this.noteQueue?.();
    const id = job.id ?? '';
    return { id, result: () => this.results.wait(job) };
  }

  /** Runs one task off the queue. */
  private async process(job: Job, token: string | undefined): Promise<unknown> {
    const { config, host } = this;
    const task = this.lookup(job.name);
    const data = job.data as QueuedData;
    const taskId = job.id ?? '';
    if (!task) {
      const message = `task "${job.name}" (${taskId}) on queue executor "${config.name}": no task of that id is registered on node ${host.instanceId} (runner.addTask)`;
      this.counters.add('failed');
      host.emitter.emit('taskEnded', { executor: config.name, kind: config.kind, task: job.name, taskId, instanceId: host.instanceId, outcome: 'failed', attempt: job.attemptsStarted, durationMs: 0, error: message, cause: undefined, willRetry: false });
      throw new UnrecoverableError(message);
    }
    const attemptNumber = Math.max(1, job.attemptsStarted);
    const maxAttempts = job.opts.attempts ?? 1;
    let ended!: (r: AttemptResult) => void;
    const result = new Promise<AttemptResult>((resolve) => (ended = resolve));
    const attempt = new TaskAttempt({
      onEnd: (r) => ended(r),
      executor: config.name,
      kind: config.kind,
      task: task.id,
      taskId,
      attempt: attemptNumber,
      instanceId: host.instanceId,
      timeoutMs: data.t,
      clock: host.clock,
      logger: host.logger,
      emitter: host.emitter,
      willRetry: () => job.attemptsMade + 1 < maxAttempts,
    });
    this.running.set(taskId, { attempt, job, token });
    attempt.begin((ctx) =>
      withTaskHook(host.hooks, { task: task.id, taskId, executor: config.name, kind: config.kind, instanceId: host.instanceId, attempt: attemptNumber, origin: data.c }, () => Promise.resolve(task.run(data.p, ctx))),
    );
    try {
      const r = await result;
      if (r.ok) {
        this.counters.add('succeeded');
        return r.value;
      }
      if (attempt.abortedReason === ErrorCodes.shutdown) {
        // Back to the queue without using an attempt: another node (or this one, later) runs it.
        this.counters.add('interrupted');
        await job.moveToWait(token);
        throw new WaitingError();
      }
      this.counters.add(r.outcome);
      // A cancelled task is not tried again.
      if (attempt.abortedReason === ErrorCodes.cancelled) throw new UnrecoverableError(errorMessage(r.error));
      throw r.error instanceof Error ? r.error : new Error(errorMessage(r.error));
    } finally {
      this.running.delete(taskId);
    }
  }

  cancel(taskId: string): boolean {
    const run = this.running.get(taskId);
    if (!run) return false;
    run.attempt.abort(ErrorCodes.cancelled, `task "${run.job.name}" (${taskId}) cancelled`);
    return true;
  }

  /** This node's view: its running tasks and the aborts it counted (the board merges the queue's counts in). */
  localStats(): ExecutorStats {
    const { config } = this;
    return { name: config.name, kind: config.kind, concurrency: config.concurrency, active: this.running.size, queued: 0, ...this.counters.snapshot() };
  }

  async stats(): Promise<ExecutorStats> {
    const { config } = this;
    const local = this.counters.snapshot();
    const counts = await countsOf(this.getQueue()).catch((err: unknown) => void this.host.logger.debug({ error: errorMessage(err), executor: config.name }, 'reading the counts of queue "%s" failed; this node\'s own are shown', config.name));
    return {
      name: config.name,
      kind: config.kind,
      concurrency: config.concurrency,
      active: counts?.active ?? this.running.size,
      queued: counts?.queued ?? 0,
      succeeded: counts?.succeeded ?? local.succeeded,
      failed: counts?.failed ?? local.failed,
      timedOut: local.timedOut,
      cancelled: local.cancelled,
      interrupted: local.interrupted,
    };
  }

  /**
   * Stops: no task is accepted or taken; running tasks get the grace, then are aborted and put
   * back on the queue (never lost), and the BullMQ connections close.
   */
  async close(graceMs: number): Promise<number> {
    this.accepting = false;
    const { clock } = this.host;
    const worker = this.worker;
    // No new task is taken from now on; the running ones go on.
    const closing = worker?.close() ?? Promise.resolve();
    await waitAtMost(clock, closing, graceMs);
    const left = [...this.running.values()];
    for (const run of left) run.attempt.abort(ErrorCodes.shutdown, `task "${run.job.name}" (${run.job.id ?? ''}) interrupted by the shutdown; it goes back to the queue`);
    await waitAtMost(clock, closing, 2_000);
    // Bounded: with Redis away, a close or a QUIT would wait for it (these connections queue).
    await waitAtMost(clock, Promise.allSettled([this.results.closeEvents(), this.queue?.close()]), 2_000);
    // A result still awaited here would never come: its events and reads end with the executor.
    this.results.stop(new LeaseholdError(ErrorCodes.shutdown, `executor "${this.config.name}" stopped before the task's result came; it stays on the queue and its result can be read again by id`));
    await waitAtMost(clock, Promise.allSettled(this.connections.map((c) => c.quit())), 1_000);
    for (const c of this.connections) c.disconnect();
    return left.length;
  }
}

