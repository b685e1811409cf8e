/**
 * Where Redis is: a URL, a Cluster's seed nodes or Sentinels, checked and described for logs
 * with passwords hidden, and turned into ioredis options.
 * @module
 */
import type { RedisOptions } from 'ioredis';
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** A single Redis server: `redis://[user:password@]host[:port][/db]` or `rediss://...` (TLS). */
export interface UrlTarget {
  readonly url: string;
}

/**
 * A Redis Cluster, from some of its nodes (the others are discovered). Each entry is
 * `host:port`, or a URL `redis[s]://[user:password@]host:port` whose user, password and TLS
 * apply to every node.
 */
export interface ClusterTarget {
  readonly clusterNodes: readonly string[];
}

/**
 * A master watched by Redis Sentinel: the Sentinels' addresses (`host:port`, port 26379 by
 * default) and the master's name. An entry written as a URL `redis[s]://[user:password@]host:port`
 * gives the user and password of the master and its replicas, and TLS for every connection.
 */
export interface SentinelTarget {
  readonly sentinels: readonly string[];
  readonly sentinelName: string;
}

/** Where Redis is: one server, a Cluster, or a master behind Sentinel. */
export type RedisTarget = UrlTarget | ClusterTarget | SentinelTarget;

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
    ErrorCodes.invalidRedisTarget,
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

/** Address, auth, database and TLS options for a URL target; throws `invalidRedisTarget`. */
export function targetOptions(target: UrlTarget): RedisOptions {
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

/** A comma-separated list (`REDIS_CLUSTER_NODES`, `REDIS_SENTINELS`), trimmed, empty entries dropped. */
export function splitList(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** One node's address. */
export interface NodeAddress {
  readonly host: string;
  readonly port: number;
}

/** Addresses of a node list, and the user, password, database and TLS its URL entries give. */
export interface NodeList {
  readonly nodes: NodeAddress[];
  /** `username`, `password`, `db` and `tls`, when an entry gave them. */
  readonly options: RedisOptions;
}

const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/@[\]]+)(?::(\d{1,5}))?$/;

/**
 * Reads a node list: `host[:port]` entries, or URLs `redis[s]://[user:password@]host[:port][/db]`.
 * URL entries that give a user, password, database or TLS must agree. Throws `invalidRedisTarget`
 * naming `what` and the entry (its password hidden).
 */
export function parseNodeList(entries: readonly string[], what: string, defaultPort: number): NodeList {
  if (entries.length === 0) {
    throw new LeaseholdError(ErrorCodes.invalidRedisTarget, `${what}: no node given; expected host:port,host:port`);
  }
  const nodes: NodeAddress[] = [];
  const options: RedisOptions = {};
  const agree = (entry: string, field: 'username' | 'password' | 'db', value: string | number | undefined): void => {
    if (value === undefined) return;
    if (options[field] !== undefined && options[field] !== value) {
      throw new LeaseholdError(ErrorCodes.invalidRedisTarget, `${what}: "${redactUrl(entry)}" gives another ${field === 'db' ? 'database' : field === 'username' ? 'user' : 'password'} than an earlier entry`);
    }
    (options as Record<string, unknown>)[field] = value;
  };
  for (const entry of entries) {
    if (/^[a-zA-Z][\w+.-]*:\/\//.test(entry)) {
      const o = targetOptions({ url: entry });
      nodes.push({ host: o.host ?? '', port: new URL(entry).port === '' ? defaultPort : (o.port ?? defaultPort) });
      agree(entry, 'username', o.username);
      agree(entry, 'password', o.password);
      if (o.db !== 0) agree(entry, 'db', o.db);
      if (o.tls) options.tls = {};
      continue;
    }
    const m = HOST_PORT.exec(entry);
    const port = m?.[2] === undefined ? defaultPort : Number(m[2]);
    if (!m || !(port >= 1 && port <= 65535)) {
      throw new LeaseholdError(ErrorCodes.invalidRedisTarget, `${what}: "${redactUrl(entry)}" is not host:port or a redis:// URL`);
    }
    nodes.push({ host: (m[1] ?? '').replace(/^\[(.*)\]$/, '$1'), port });
  }
  return { nodes, options };
}

/** The target, safe to log: passwords hidden. */
export function describeTarget(target: RedisTarget): string {
  if ('url' in target) return redactUrl(target.url);
  if ('clusterNodes' in target) return `cluster ${target.clusterNodes.map(redactUrl).join(',')}`;
  return `sentinel master "${target.sentinelName}" via ${target.sentinels.map(redactUrl).join(',')}`;
}
