/**
 * What each role's connection does when Redis is slow or away: its timeouts, its queueing and
 * its reconnection delays, for one server. A Cluster's and a Sentinel's connections add their own
 * options to these (`cluster.ts`, `sentinel.ts`).
 * @module
 */
import type { RedisOptions } from 'ioredis';
import { QUIT_WAIT_MS } from './close.js';
import { ErrorCodes, LeaseholdError } from '../errors.js';

/**
 * What a connection is for. `lease`: claims and extensions, fail fast.
 * `stats`: counters and status reads, fail fast (the stats writer keeps what
 * it could not write). `sub`: pub/sub; on one server its owner subscribes again on every
 * `'ready'`, on a Cluster ioredis resubscribes. `queue`: a BullMQ queue executor's, apart from
 * the lease's: it waits for Redis rather than failing fast (BullMQ's workers need
 * `maxRetriesPerRequest: null`, and hold blocking commands).
 */
export type RedisRole = 'lease' | 'stats' | 'sub' | 'queue';

/** Default command timeout of a `lease` connection, in ms. */
export const LEASE_COMMAND_TIMEOUT_MS = 2000;
/** Default command timeout of a `stats` connection, in ms. */
export const STATS_COMMAND_TIMEOUT_MS = 5000;
/** Longest wait between two reconnection attempts, in ms. */
export const MAX_RECONNECT_DELAY_MS = 2000;

/** Reconnection delay after `times` failed attempts: doubling, capped. */
export function reconnectDelay(times: number): number {
  return Math.min(50 * 2 ** Math.min(Math.max(times, 1), 16), MAX_RECONNECT_DELAY_MS);
}

/** Timeouts, queueing and retry options for a role. */
export function roleOptions(role: RedisRole, commandTimeoutMs?: number): RedisOptions {
  const common: RedisOptions = {
    connectionName: `leasehold-${role}`,
    keyPrefix: '',
    lazyConnect: false,
    retryStrategy: reconnectDelay,
    // A disconnect ends the socket, and destroys it after this long: a stalled server never
    // answers the end, and the socket would hold the process (ioredis's default is 2 s).
    disconnectTimeout: QUIT_WAIT_MS,
  };
  if (commandTimeoutMs !== undefined && !(Number.isFinite(commandTimeoutMs) && commandTimeoutMs > 0)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `commandTimeoutMs must be a positive number of ms, got ${String(commandTimeoutMs)}`);
  }
  switch (role) {
    case 'lease':
      return {
        ...common,
        commandTimeout: commandTimeoutMs ?? LEASE_COMMAND_TIMEOUT_MS,
        connectTimeout: 5000,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
        // The claim and release calls of one instant, and extensions made together, leave in one write.
        enableAutoPipelining: true,
      };
    case 'stats':
      return {
        ...common,
        commandTimeout: commandTimeoutMs ?? STATS_COMMAND_TIMEOUT_MS,
        connectTimeout: 5000,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        autoResendUnfulfilledCommands: false,
      };
    case 'queue':
      return { ...common, commandTimeout: commandTimeoutMs, maxRetriesPerRequest: null, enableOfflineQueue: true };
    case 'sub':
      // Its owner sets it up again on every 'ready' (CLIENT TRACKING must be on before the
      // connection enters subscriber mode), so ioredis neither queues, resends nor resubscribes.
      return {
        ...common,
        commandTimeout: commandTimeoutMs,
        enableOfflineQueue: false,
        autoResubscribe: false,
        autoResendUnfulfilledCommands: false,
      };
  }
}

