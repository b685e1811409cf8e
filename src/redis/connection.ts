/**
 * Redis connections, one kind per role. The lease connection fails fast: a
 * stalled or absent Redis must abort a claim or an extension within a
 * deadline, never leave it queued until Redis returns.
 * @module
 */
import { tracked } from './problem.js';
import { QUIT_WAIT_MS } from './close.js';
import { Cluster, Redis, type Callback, type ClusterOptions, type RedisOptions } from 'ioredis';
import { systemClock, type Timers } from '../clock.js';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { parseNodeList, targetOptions, type NodeList, type RedisTarget } from './target.js';

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

/**
 * Cluster options for a role. The role's options apply to every node's connection; a
 * fail-fast role also gets no offline queue at the cluster level, so a command fails at once
 * while the cluster is away. Redirections (MOVED, ASK) and retries during a failover stay
 * bounded (the command timeout, which counts from the command's first send, and ioredis's
 * limit of 16 redirections).
 */
export function clusterRoleOptions(role: RedisRole, commandTimeoutMs: number | undefined, nodeOptions: RedisOptions = {}): ClusterOptions {
  const { retryStrategy: _perNode, enableOfflineQueue: roleQueue, ...perNode } = roleOptions(role, commandTimeoutMs);
  // A Cluster's subscriber is ioredis's own connection, which resubscribes by itself; the
  // subscription waits in the cluster's offline queue until the slots are known.
  const enableOfflineQueue = role === 'sub' ? true : roleQueue;
  const { host: _host, port: _port, db: _db, ...auth } = nodeOptions;
  return {
    enableOfflineQueue,
    // No auto-pipelining on a Cluster: an auto-pipeline mixes the slots of one node, and when a
    // failover moves them, ioredis follows the MOVED replies of a pipeline only when they all
    // name the same slot; the claims in it would fail instead of being redirected.
    enableAutoPipelining: false,
    // The ready check (CLUSTER INFO) cannot pass without an offline queue: its node is still
    // connecting. Fail-fast connections are ready once they know the slots.
    enableReadyCheck: enableOfflineQueue === true,
    clusterRetryStrategy: reconnectDelay,
    // Node connections are not redialled on their own: a node that is away is found again
    // (or replaced by its promoted replica) through the slot map, refreshed this often.
    slotsRefreshInterval: 2_000,
    slotsRefreshTimeout: 1_000,
    redisOptions: { ...auth, ...perNode },
    lazyConnect: false,
  };
}

/**
 * Opens `cluster`'s node connections as soon as the nodes are known. Without this a node is
 * dialled by its first command, and a second command sent while it connects is refused (no
 * offline queue). Replicas are dialled too (ioredis marks their connections READONLY): when
 * one is promoted, its connection is ready for the job's next claim.
 */
function dialNodes(cluster: Cluster, onDialError: ((err: unknown) => void) | undefined): Cluster {
  const dial = (node: Redis): void => {
    // A failed dial is retried through the slot map: it is only told.
    if (node.status === 'wait') node.connect().catch((err: unknown) => onDialError?.(err));
  };
  for (const node of cluster.nodes('all')) dial(node);
  cluster.on('+node', dial);
  return cluster;
}

/**
 * Options for a master behind Sentinel. A write refused with READONLY (the server was
 * demoted, and the Sentinels have not told yet) drops the connection, which then asks the
 * Sentinels for the master again; so does a failover announced by the Sentinels.
 */
export function sentinelRoleOptions(role: RedisRole, commandTimeoutMs: number | undefined, list: NodeList, name: string): RedisOptions {
  const { tls, ...auth } = list.options;
  return {
    ...auth,
    sentinels: list.nodes.map((n) => ({ host: n.host, port: n.port })),
    name,
    ...(tls ? { tls, enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
    sentinelRetryStrategy: reconnectDelay,
    failoverDetector: true,
    reconnectOnError: (err: Error) => (err.message.startsWith('READONLY') ? 1 : false),
    ...roleOptions(role, commandTimeoutMs),
  };
}

function checkTarget(target: RedisTarget): RedisTarget {
  if ('sentinels' in target && !(typeof target.sentinelName === 'string' && /^[^\s]{1,128}$/.test(target.sentinelName))) {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, 'Redis Sentinel needs the name of the master (REDIS_SENTINEL_NAME)');
  }
  return target;
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
    const list = parseNodeList(target.clusterNodes, 'REDIS_CLUSTER_NODES', 6379);
    if (list.options.db !== undefined) {
      throw new LeaseholdError(ErrorCodes.invalidRedisTarget, 'REDIS_CLUSTER_NODES: a Redis Cluster has only database 0');
    }
    return dialNodes(new Cluster(list.nodes.map((n) => ({ host: n.host, port: n.port })), clusterRoleOptions(opts.role, opts.commandTimeoutMs, list.options)), opts.onDialError);
  }
  const list = parseNodeList(target.sentinels, 'REDIS_SENTINELS', 26379);
  return new SentinelRedis(sentinelRoleOptions(opts.role, opts.commandTimeoutMs, list, target.sentinelName), opts.onReopen);
}

/**
 * A connection to a master named by Sentinels, opened again when ioredis ends it without being
 * asked to. ioredis (5.11) ends a Sentinel connection for good when the Sentinels announce a
 * failover while the connection is asking them for the master to reconnect to: its failover
 * detector closes the connector in the middle of that connect, which then fails with
 * "Connection is closed." and sets the status `end`, whatever the retry strategy says. The node
 * would never reach Redis again on it (seen in the master-kill measurement of
 * `scaleout-sentinel.test.ts`: a node's stats connection ended so, and the nodes ran no tick for
 * 30 s). A connection that ends without its own `disconnect()` or `quit()` having been called is
 * opened again after the reconnection delay; a connect that fails ends it again, and it is tried
 * again. One closed by either stays closed, whoever closed it.
 */
class SentinelRedis extends Redis {
  #closed = false;
  #attempts = 0;

  constructor(options: RedisOptions, onReopen: ((failure?: unknown) => void) | undefined) {
    super(options);
    this.on('ready', () => (this.#attempts = 0));
    this.on('end', () => {
      if (this.#closed) return;
      this.#attempts += 1;
      systemClock.setTimer(
        () => {
          if (this.#closed || this.status !== 'end') return;
          onReopen?.();
          // A failure sets the status `end` again, which comes back here and tries again.
          this.connect().catch((err: unknown) => onReopen?.(err));
        },
        reconnectDelay(this.#attempts),
        true,
      );
    });
  }

  override disconnect(reconnect = false): void {
    if (!reconnect) this.#closed = true;
    super.disconnect(reconnect);
  }

  override quit(callback?: Callback<'OK'>): Promise<'OK'> {
    this.#closed = true;
    return super.quit(callback);
  }
}

/**
 * Resolves once `redis` is ready for commands; rejects with `redisError`
 * after `timeoutMs` (on `clock`) or when the connection is closed for good.
 */
export function whenReady(redis: RedisClient, timeoutMs: number, clock: Timers = systemClock): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  if (redis.status === 'end') {
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
