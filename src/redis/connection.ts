/**
 * Redis connections, one kind per role (`roles.ts`), to one server, a Redis Cluster
 * (`cluster.ts`) or a master behind Sentinel (`sentinel.ts`), and the wait for one to be ready.
 * The lease connection fails fast: a stalled or absent Redis must abort a claim or an extension
 * within a deadline, never leave it queued until Redis returns.
 * @module
 */
import { tracked } from './problem.js';
import { Cluster, Redis } from 'ioredis';
import { systemClock, type Timers } from '../clock.js';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { parseNodeList, targetOptions, type NodeList, type RedisTarget } from './target.js';
import { roleOptions, type RedisRole } from './roles.js';
import { clusterRoleOptions, dialNodes } from './cluster.js';
import { SentinelRedis, sentinelRoleOptions } from './sentinel.js';

/**
 * An ioredis client: a connection to one Redis (possibly found through Sentinel) or to a Redis
 * Cluster. In the public API only where a runner adopts a client of the application's
 * (`createRunner({ redis })`): it is duplicated for each of the runner's connections.
 */
export type RedisClient = Redis | Cluster;

export { redisAddress, redisProblem } from './problem.js';
export { closeRedis, QUIT_WAIT_MS } from './close.js';

/** Options for {@link createRedis}. Exactly one of `url`, `target` and `client`. */
export interface CreateRedisOptions {
  /** A Redis URL; shorthand for `target: { url }`. */
  url?: string;
  /** Where Redis is. */
  target?: RedisTarget;
  /** An existing client whose address, auth and TLS are reused (it is duplicated, not shared). */
  client?: RedisClient;
  /** What the connection is for; decides timeouts and queueing. */
  role: RedisRole;
  /** Per-command timeout in ms; defaults by role (none for `sub`). */
  commandTimeoutMs?: number;
  /**
   * Told when a Redis Cluster's node could not be dialled at once (it is dialled again through
   * the slot map); the Cluster reports nothing else of it.
   */
  onDialError?: (err: unknown) => void;
  /**
   * Told when a Sentinel connection that ended without its `disconnect()` or `quit()` being
   * called is opened again (see `SentinelRedis`), and told again with the error when that
   * attempt fails (the connection is then tried again after the reconnection delay).
   */
  onReopen?: (failure?: unknown) => void;
}

function checkTarget(target: RedisTarget): RedisTarget {
  if ('sentinels' in target && !(typeof target.sentinelName === 'string' && /^[^\s]{1,128}$/.test(target.sentinelName))) {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, 'Redis Sentinel needs the name of the master (REDIS_SENTINEL_NAME)');
  }
  return target;
}

/** A Cluster target's nodes and the options their URLs carry; throws `invalidRedisTarget`. */
function clusterNodes(target: { readonly clusterNodes: readonly string[] }): NodeList {
  const list = parseNodeList(target.clusterNodes, 'REDIS_CLUSTER_NODES', 6379);
  if (list.options.db !== undefined) {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, 'REDIS_CLUSTER_NODES: a Redis Cluster has only database 0');
  }
  return list;
}

/** Checks `target` as a connection to it would, without connecting; throws `invalidRedisTarget` naming what is wrong. */
export function checkRedisTarget(target: RedisTarget): void {
  checkTarget(target);
  if ('url' in target) targetOptions(target);
  else if ('clusterNodes' in target) clusterNodes(target);
  else parseNodeList(target.sentinels, 'REDIS_SENTINELS', 26379);
}

/**
 * A new connection for `role`, to `url`, to `target` or to the same server(s) as `client`.
 * A fail-fast connection (`lease`, `stats`) rejects commands until it is ready; await
 * {@link whenReady} after creating one. A URL or a single-server client gives a `Redis`;
 * a Cluster target or client gives a `Cluster`, a Sentinel target a `Redis` that follows
 * the master.
 */
export function createRedis(opts: CreateRedisOptions & { target?: undefined; client?: Redis }): Redis;
export function createRedis(opts: CreateRedisOptions): RedisClient;
export function createRedis(opts: CreateRedisOptions): RedisClient {
  return tracked(connect(opts));
}

function connect(opts: CreateRedisOptions): RedisClient {
  const given = [opts.url, opts.target, opts.client].filter((x) => x !== undefined).length;
  if (given > 1) {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, 'give either a Redis url, a target or a client, not several');
  }
  if (opts.client instanceof Cluster) {
    return dialNodes(opts.client.duplicate(undefined, clusterRoleOptions(opts.role, opts.commandTimeoutMs, opts.client.options.redisOptions)), opts.onDialError);
  }
  if (opts.client !== undefined) return opts.client.duplicate(roleOptions(opts.role, opts.commandTimeoutMs));
  const target = opts.target ?? (opts.url === undefined ? undefined : { url: opts.url });
  if (target === undefined) {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, 'a Redis url, target or client is required');
  }
  checkTarget(target);
  if ('url' in target) return new Redis({ ...targetOptions(target), ...roleOptions(opts.role, opts.commandTimeoutMs) });
  if ('clusterNodes' in target) {
    const list = clusterNodes(target);
    return dialNodes(new Cluster(list.nodes.map((n) => ({ host: n.host, port: n.port })), clusterRoleOptions(opts.role, opts.commandTimeoutMs, list.options)), opts.onDialError);
  }
  const list = parseNodeList(target.sentinels, 'REDIS_SENTINELS', 26379);
  return new SentinelRedis(sentinelRoleOptions(opts.role, opts.commandTimeoutMs, list, target.sentinelName), opts.onReopen);
}

/** Whether `redis` has ended and will not be opened again (a Sentinel connection is, unless closed by its owner). */
function endedForGood(redis: RedisClient): boolean {
  return redis.status === 'end' && !(redis instanceof SentinelRedis && redis.reopens);
}

/**
 * Resolves once `redis` is ready for commands; rejects with `redisError`
 * after `timeoutMs` (on `clock`) or when the connection is closed for good.
 */
export function whenReady(redis: RedisClient, timeoutMs: number, clock: Timers = systemClock): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  if (endedForGood(redis)) {
    return Promise.reject(new LeaseholdError(ErrorCodes.redisError, 'Redis connection is closed'));
  }
  return new Promise((resolve, reject) => {
    let lastError: unknown;
    const cleanup = (): void => {
      clock.clearTimer(timer);
      redis.off('ready', onReady);
      redis.off('end', onEnd);
      redis.off('error', onError);
    };
    const onReady = (): void => {
      cleanup();
      resolve();
    };
    const onEnd = (): void => {
      if (!endedForGood(redis)) return;
      cleanup();
      reject(new LeaseholdError(ErrorCodes.redisError, 'Redis connection closed before it was ready', { cause: lastError }));
    };
    const onError = (err: unknown): void => {
      lastError = err;
    };
    const timer = clock.setTimer(() => {
      cleanup();
      reject(new LeaseholdError(ErrorCodes.redisError, `Redis not ready within ${timeoutMs}ms`, { cause: lastError }));
    }, timeoutMs);
    redis.on('ready', onReady);
    redis.on('end', onEnd);
    redis.on('error', onError);
  });
}
