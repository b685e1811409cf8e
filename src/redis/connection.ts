/**
 * Redis connections, one kind per role. The lease connection fails fast: a
 * stalled or absent Redis must abort a claim or an extension within a
 * deadline, never leave it queued until Redis returns.
 * @module
 */
import { Redis, type RedisOptions } from 'ioredis';
import { ErrorCodes, LeaseholdError } from '../errors.js';

/**
 * What a connection is for. `lease`: claims and extensions, fail fast.
 * `stats`: counters and status reads, fail fast (the stats writer keeps what
 * it could not write). `sub`: pub/sub, waits for Redis and resubscribes.
 */
export type RedisRole = 'lease' | 'stats' | 'sub';

/** Default command timeout of a `lease` connection, in ms. */
export const LEASE_COMMAND_TIMEOUT_MS = 2000;
/** Default command timeout of a `stats` connection, in ms. */
export const STATS_COMMAND_TIMEOUT_MS = 5000;
/** Longest wait between two reconnection attempts, in ms. */
export const MAX_RECONNECT_DELAY_MS = 2000;

/**
 * Where Redis is. Only a URL today; Redis Cluster (`REDIS_CLUSTER_NODES`) and
 * Sentinel (`REDIS_SENTINELS`) become further members of this type.
 */
export interface RedisTarget {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://...` (TLS). */
  url: string;
}

/** Options for {@link createRedis}. Exactly one of `url` and `client`. */
export interface CreateRedisOptions {
  /** A Redis URL; see {@link RedisTarget.url}. */
  url?: string;
  /** An existing client whose address, auth and TLS are reused (it is duplicated, not shared). */
  client?: Redis;
  /** What the connection is for; decides timeouts and queueing. */
  role: RedisRole;
  /** Per-command timeout in ms; defaults by role (none for `sub`). */
  commandTimeoutMs?: number;
}

/**
 * The URL with its password replaced by `***`, safe to log. Works on strings
 * that are not valid URLs too: whatever lies between the first `:` after the
 * scheme and the last `@` is hidden.
 */
export function redactUrl(url: string): string {
  const scheme = /^[a-zA-Z][\w+.-]*:\/\//.exec(url)?.[0] ?? '';
  const rest = url.slice(scheme.length);
  const at = rest.lastIndexOf('@');
  if (at < 0) return url;
  const colon = rest.indexOf(':');
  if (colon < 0 || colon > at) return url;
  return `${scheme}${rest.slice(0, colon)}:***${rest.slice(at)}`;
}

function invalid(url: string, why: string): LeaseholdError {
  return new LeaseholdError(
    ErrorCodes.INVALID_CONFIG,
    `Redis url "${redactUrl(url)}" ${why}; expected redis://[user:password@]host[:port][/db] or rediss://...`,
  );
}

function decode(url: string, part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw invalid(url, `has a badly escaped ${what}`);
  }
}

/** Address, auth, database and TLS options for `target`; throws `INVALID_CONFIG`. */
export function targetOptions(target: RedisTarget): RedisOptions {
  const { url } = target;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The parser's own error is not kept as cause: it carries the raw input.
    throw invalid(url, 'is not a valid URL');
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw invalid(url, `has scheme "${parsed.protocol}"`);
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalid(url, 'has no host');
  const dbText = parsed.pathname.replace(/^\//, '');
  if (dbText !== '' && !/^\d{1,5}$/.test(dbText)) {
    throw invalid(url, `has database "${dbText}", not a number`);
  }
  if ([...parsed.searchParams.keys()].length > 0) {
    throw invalid(url, 'has query parameters, which are not supported');
  }
  const options: RedisOptions = {
    host,
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    db: dbText === '' ? 0 : Number(dbText),
  };
  if (parsed.username !== '') options.username = decode(url, parsed.username, 'user name');
  if (parsed.password !== '') options.password = decode(url, parsed.password, 'password');
  if (parsed.protocol === 'rediss:') options.tls = {};
  return options;
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
  };
  if (commandTimeoutMs !== undefined && !(Number.isFinite(commandTimeoutMs) && commandTimeoutMs > 0)) {
    throw new LeaseholdError(ErrorCodes.INVALID_CONFIG, `commandTimeoutMs must be a positive number of ms, got ${String(commandTimeoutMs)}`);
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
    case 'sub':
      return {
        ...common,
        commandTimeout: commandTimeoutMs,
        enableOfflineQueue: true,
        autoResubscribe: true,
      };
  }
}

/**
 * A new connection for `role`, to `url` or to the same server as `client`.
 * A fail-fast connection (`lease`, `stats`) rejects commands until it is
 * ready; await {@link whenReady} after creating one.
 */
export function createRedis(opts: CreateRedisOptions): Redis {
  const role = roleOptions(opts.role, opts.commandTimeoutMs);
  if (opts.client !== undefined && opts.url !== undefined) {
    throw new LeaseholdError(ErrorCodes.INVALID_CONFIG, 'give either a Redis url or a client, not both');
  }
  if (opts.client !== undefined) return opts.client.duplicate(role);
  if (opts.url === undefined) {
    throw new LeaseholdError(ErrorCodes.INVALID_CONFIG, 'a Redis url or client is required');
  }
  return new Redis({ ...targetOptions({ url: opts.url }), ...role });
}

/**
 * Resolves once `redis` is ready for commands; rejects with `REDIS_ERROR`
 * after `timeoutMs` or when the connection is closed for good.
 */
export function whenReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  if (redis.status === 'end') {
    return Promise.reject(new LeaseholdError(ErrorCodes.REDIS_ERROR, 'Redis connection is closed'));
  }
  return new Promise((resolve, reject) => {
    let lastError: unknown;
    const cleanup = (): void => {
      clearTimeout(timer);
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
      reject(new LeaseholdError(ErrorCodes.REDIS_ERROR, 'Redis connection closed before it was ready', { cause: lastError }));
    };
    const onError = (err: unknown): void => {
      lastError = err;
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new LeaseholdError(ErrorCodes.REDIS_ERROR, `Redis not ready within ${timeoutMs}ms`, { cause: lastError }));
    }, timeoutMs);
    redis.on('ready', onReady);
    redis.on('end', onEnd);
    redis.on('error', onError);
  });
}
