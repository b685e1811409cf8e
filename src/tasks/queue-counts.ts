/**
 * A queue executor's BullMQ queue as the executors view reads it: where its keys live under the
 * runner's prefix, and its counts of tasks (active, waiting, done, failed).
 * @module
 */
import { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import { keys } from '../redis/keys.js';

/** A queue's counts of tasks. */
export interface QueueCounts {
  readonly active: number;
  /** Waiting, delayed and prioritized. */
  readonly queued: number;
  /** Completed ones BullMQ keeps (`keepCompleted`). */
  readonly succeeded: number;
  /** Failed ones BullMQ keeps (`keepFailed`). */
  readonly failed: number;
}

/** The BullMQ prefix of a runner's queues: `<prefix>:tasks` (each queue's name is `{<executor>}`, a hash tag; see `keys.ts`). */
export function queuePrefix(prefix: string): string {
  return keys(prefix).taskPrefix;
}

/** The counts of `queue`, in one call. */
export async function countsOf(queue: Queue): Promise<QueueCounts> {
  const c = await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized', 'completed', 'failed');
  return { active: c['active'] ?? 0, queued: (c['waiting'] ?? 0) + (c['delayed'] ?? 0) + (c['prioritized'] ?? 0), succeeded: c['completed'] ?? 0, failed: c['failed'] ?? 0 };
}

/** The counts of the queue of executor `name`, read through BullMQ on an existing connection (which it leaves open). */
export async function queueCounts(redis: RedisClient, prefix: string, name: string): Promise<QueueCounts> {
  const queue = new Queue(`{${name}}`, { connection: redis, prefix: queuePrefix(prefix) });
  try {
    return await countsOf(queue);
  } finally {
    await queue.close();
  }
}
