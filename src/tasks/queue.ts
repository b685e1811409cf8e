/**
 * Queue executors: durable, cluster-wide, on BullMQ.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisTarget } from '../redis/target.js';
import type { RedisClient } from '../redis/connection.js';
import type { QueueFactory } from './index.js';

/** Where the queues' Redis is. */
export type QueueRedis = { readonly target: RedisTarget } | { readonly client: RedisClient };

/** Makes queue executors on the runner's Redis. */
export function queueExecutor(_where: QueueRedis, _prefix: string): QueueFactory {
  return (config) => {
    throw new LeaseholdError(ErrorCodes.invalidTask, `executor "${config.name}": queue executors are not available`);
  };
}
