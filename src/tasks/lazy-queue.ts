/**
 * Queue executors made without loading BullMQ: the library is imported with the first queue
 * executor a node uses, so a node with none pays neither its start-up time nor its memory
 * (about 0.3 s and 15 MB). BullMQ is an optional peer dependency: without it, a queue executor is
 * refused when a task names it (`missingPeer`).
 * @module
 */
import { errorMessage } from '../errors.js';
import { importPeer } from '../peer.js';
import type { ResolvedExecutor } from './config.js';
import type { ExecutorStats, TaskExecutor } from './executor.js';
import type { QueueFactory } from './index.js';
import type { ExecutorHost } from './local.js';
import type { QueueConnect } from './queue.js';
import type { NormalizedSubmit, NormalizedTask, TaskHandle } from './task.js';

/** Makes queue executors on the runner's Redis; BullMQ is loaded with the first one. */
export function queueExecutor(connect: QueueConnect, prefix: string): QueueFactory {
  let factory: Promise<QueueFactory> | undefined;
  return (config, host, lookup) => {
    factory ??= importPeer('bullmq', 'queue executors', () => import('./queue.js')).then((m) => m.queueExecutor(connect, prefix));
    return new LazyExecutor(config, host, factory.then((make) => make(config, host, lookup)));
  };
}

/** A queue executor until BullMQ is loaded: every call waits for the real one, or answers as an idle one would. */
class LazyExecutor implements TaskExecutor {
  private loaded: TaskExecutor | undefined;

  constructor(
    readonly config: ResolvedExecutor,
    host: ExecutorHost,
    private readonly ready: Promise<TaskExecutor>,
  ) {
    ready.then(
      (executor) => {
        this.loaded = executor;
      },
      (err: unknown) => host.logger.error({ err: { message: errorMessage(err) }, executor: config.name }, 'executor "%s": BullMQ could not be loaded: %s', config.name, errorMessage(err)),
    );
  }

  get name(): string {
    return this.config.name;
  }

  async submit(task: NormalizedTask, payload: unknown, opts: NormalizedSubmit): Promise<TaskHandle> {
    return (await this.ready).submit(task, payload, opts);
  }

  consume(): void {
    // A BullMQ that could not be loaded was logged once, as this executor was made.
    this.ready.then((executor) => executor.consume?.(), () => undefined);
  }

  cancel(taskId: string): boolean {
    return this.loaded?.cancel(taskId) ?? false;
  }

  stats(): ExecutorStats | Promise<ExecutorStats> {
    return this.loaded ? this.loaded.stats() : this.ready.then((executor) => executor.stats());
  }

  localStats(): ExecutorStats {
    if (this.loaded) return this.loaded.localStats();
    const { name, kind, concurrency } = this.config;
    return { name, kind, concurrency, active: 0, queued: 0, succeeded: 0, failed: 0, timedOut: 0, cancelled: 0, interrupted: 0 };
  }

  async close(graceMs: number): Promise<number> {
    return (await this.ready).close(graceMs);
  }
}
