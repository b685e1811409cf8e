/**
 * Redis failures in leasehold's words: which Redis (`redisAddress`) and why it is down, from
 * the connection's own last error rather than what the client says of a command it could not
 * send ("Stream isn't writeable ...").
 * @module
 */
import { Cluster } from 'ioredis';
import type { Redis } from 'ioredis';

/** A connection: one server's (or a Sentinel master's) or a Cluster's. */
type RedisClient = Redis | Cluster;

/** Where a client connects, for messages: `host:port`, the Sentinel master's name, or the Cluster. */
export function redisAddress(redis: RedisClient): string {
  if (redis instanceof Cluster) return 'the Redis Cluster';
  const o = redis.options;
  if (o.sentinels && o.name) return `master "${o.name}"`;
  return `${o.host ?? '127.0.0.1'}:${o.port ?? 6379}`;
}

/** The last error of each connection made by {@link createRedis}, until it is ready again: why it is down. */
const connectionErrors = new WeakMap<RedisClient, string>();

/** What ioredis says of a command sent while it is not connected: no cause of its own. */
const NOT_CONNECTED = /isn't writeable|enableOfflineQueue|Connection is closed|not ready|reconnecting/i;

/**
 * A failure of Redis said once, plainly: `Redis at <where> is unreachable: <cause>` when the
 * connection is down (not ready, refused, reset, timed out, not resolved), the cause being
 * why the connection failed (`connect ECONNREFUSED 127.0.0.1:6390`) rather than what the client
 * says of a command it could not send; else `Redis at <where> failed: <why>`.
 */
export function redisProblem(redis: RedisClient, err: unknown): string {
  const why = err instanceof Error ? err.message : String(err);
  const down = redis.status !== 'ready' || NOT_CONNECTED.test(why) || /ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|command timed out/i.test(why);
  const where = redisAddress(redis);
  if (!down) return `Redis at ${where} failed: ${why}`;
  const cause = connectionErrors.get(redis) ?? (NOT_CONNECTED.test(why) ? 'not connected' : why);
  return `Redis at ${where} is unreachable: ${cause}`;
}

/** Keeps a connection's last error (for {@link redisProblem}) until it is ready again. */
export function tracked<C extends RedisClient>(client: C): C {
  client.on('error', (err: unknown) => connectionErrors.set(client, err instanceof Error ? err.message : String(err)));
  client.on('ready', () => connectionErrors.delete(client));
  return client;
}

