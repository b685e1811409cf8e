/**
 * The results of queued tasks, awaited on any node: told by the queue's events, and read off the
 * queue every ten seconds besides, so that an event missed (seen on a loaded machine after a node
 * died mid-task) cannot leave a caller waiting for good. A stop ends every wait still open.
 * @module
 */
import { Job, QueueEvents, type Queue } from 'bullmq';
import { sleep, type Timers } from '../clock.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/connection.js';
import { queuePrefix } from './queue-counts.js';

/** How often a result still awaited is read off the queue, besides the queue's events, ms. */
const RESULT_READ_MS = 10_000;

/** What the waits need of their executor. */
export interface ResultWaitsOptions {
  /** The executor's name, for the log. */
  readonly executor: string;
  /** The BullMQ queue's name (`{<executor>}`) and the runner's prefix. */
  readonly queueName: string;
  readonly prefix: string;
  readonly clock: Timers;
  readonly logger: Logger;
  /** The executor's queue (made on first use). */
  queue(): Queue;
  /** A new connection of the executor's, which the executor closes. */
  connection(): RedisClient;
  /** False once the executor stops: the reads end. */
  accepting(): boolean;
}

/** The waits for results of one queue executor. */
export class ResultWaits {
  private events: QueueEvents | undefined;
  /** How to end each wait still open, at stop. */
  private readonly open = new Set<(err: Error) => void>();

  constructor(private readonly opts: ResultWaitsOptions) {}

  /** The task's result, or its failure; rejects with the error given to {@link stop} if the executor stops first. */
  wait(job: Job): Promise<never> {
    const { opts } = this;
    this.events ??= new QueueEvents(opts.queueName, { connection: opts.connection(), prefix: queuePrefix(opts.prefix) });
    const events = this.events;
    const told = events.waitUntilReady().then(() => job.waitUntilFinished(events));
    let settled = false;
    const read = this.read(job.id ?? '', () => settled);
    let stop: ((err: Error) => void) | undefined;
    const stopped = new Promise<never>((_, reject) => (stop = reject));
    if (stop) this.open.add(stop);
    return Promise.race([told, read, stopped]).finally(() => {
      settled = true;
      if (stop) this.open.delete(stop);
    }) as Promise<never>;
  }

  /** Closes the queue's events (the executor bounds the wait). */
  closeEvents(): Promise<void> {
    return this.events?.close() ?? Promise.resolve();
  }

  /** Ends every wait still open with `err`. */
  stop(err: Error): void {
    for (const stop of this.open) stop(err);
  }

  /** Reads a task's outcome off the queue every ten seconds until it is finished, or `done()`. */
  private async read(id: string, done: () => boolean): Promise<unknown> {
    const { opts } = this;
    for (;;) {
      await sleep(opts.clock, RESULT_READ_MS);
      if (done() || !opts.accepting()) return new Promise<never>(() => undefined);
      const found = await Job.fromId(opts.queue(), id).catch((err: unknown) => void this.readFailed(id, err));
      const state = await found?.getState().catch((err: unknown) => void this.readFailed(id, err));
      if (state === 'completed') return found?.returnvalue;
      if (state === 'failed') throw new Error(found?.failedReason ?? 'failed');
    }
  }

  /** A read of a task's outcome failed: the next read (or the queue's event) tells it. */
  private readFailed(id: string, err: unknown): void {
    this.opts.logger.debug({ error: errorMessage(err), executor: this.opts.executor, taskId: id }, 'reading the outcome of task %s off the queue failed; read again in %d s', id, RESULT_READ_MS / 1000);
  }
}
