/**
 * `leasehold status [--json]`: the cluster's status straight from Redis, as a table or as
 * exactly the JSON `GET /manage/jobs` returns.
 * @module
 */
import { parseArgs } from 'node:util';
import { createRedis, whenReady, type RedisClient } from '../redis/connection.js';
import { describeTarget, splitList, type RedisTarget } from '../redis/target.js';
import { DEFAULT_PREFIX, keys as keyNames, type Keys } from '../redis/keys.js';
import { readCluster } from '../status/read.js';
import type { ClusterStatus, JobStatus } from '../status/model.js';
import type { CommandResult } from './main.js';
import { systemClock } from '../clock.js';
import { mergeQueues, readBoard, type ExecutorStats } from '../tasks/index.js';
import { ErrorCodes, errorMessage, isLeaseholdError } from '../errors.js';
import { checkPrefix, checkRedisSource } from '../config.js';
import { REDIS_SETTINGS, helpOption, settingByFlag, settingName } from './config.js';
import { renderHelp, type CommandHelp, type HelpOption } from './help.js';

const USAGE =
  'usage: leasehold status [--json] [--redis-url URL | --redis-cluster-nodes H:P,... | --redis-sentinels H:P,... --redis-sentinel-name N] [--prefix P]\n' +
  '       (or REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS with REDIS_SENTINEL_NAME, LEASEHOLD_PREFIX)\n';

/** How long `status` waits for Redis, in ms. */
export const STATUS_CONNECT_TIMEOUT_MS = 3_000;

function short(isoTime: string | null): string {
  return isoTime ? isoTime.replace(/\.\d{3}Z$/, 'Z') : '-';
}

function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')).join('\n') + '\n';
}

function unsuccessful(j: JobStatus): number {
  return j.failed + j.timedOut + j.lockLost;
}

/** Renders the status as a readable table: jobs, their problems, then the live instances. */
export function renderStatus(s: ClusterStatus): string {
  let out = '';
  if (s.jobs.length === 0) {
    out += 'no jobs registered\n';
  } else {
    const rows = [['ID', 'SCOPE', 'STATE', 'RUNS', 'OK', 'FAILED', 'LAST OUTCOME', 'LAST START', 'NEXT DUE']];
    for (const j of s.jobs) {
      rows.push([j.id, j.scope ?? '-', j.state, String(j.runs), String(j.succeeded), String(unsuccessful(j)), j.lastOutcome ?? '-', short(j.lastStartedAt), short(j.nextDueAt)]);
    }
    out += table(rows);
    const notes = s.jobs.flatMap((j) => [
      ...j.degradedReasons.map((r) => `  ${j.id}: ${r}`),
      ...(j.lastError && j.lastOutcome !== 'succeeded' ? [`  ${j.id}: last error: ${j.lastError.split('\n')[0] ?? ''}`] : []),
      ...(j.lease ? [`  ${j.id}: lease held by ${j.lease.holder}${j.lease.ttlMs === null ? '' : ` for ${Math.ceil(j.lease.ttlMs / 1000)}s more`}`] : []),
    ]);
    if (notes.length > 0) out += `\n${notes.join('\n')}\n`;
  }
  out += '\n';
  if (s.instances.length === 0) {
    out += 'no live instances\n';
  } else {
    const rows = [['INSTANCE', 'HOST', 'PID', 'VERSION', 'STARTED', 'LAST SEEN']];
    for (const i of s.instances) rows.push([i.id, i.host ?? '-', i.pid === null ? '-' : String(i.pid), i.version ?? '-', short(i.startedAt), short(i.lastSeenAt)]);
    out += table(rows);
  }
  return out;
}

/** Renders the executors of background tasks: a row per node for loop and worker executors, one per queue. */
export function renderExecutors(rows: readonly ExecutorStats[]): string {
  if (rows.length === 0) return 'no executors in use\n';
  const out = [['EXECUTOR', 'KIND', 'INSTANCE', 'CONCURRENCY', 'ACTIVE', 'QUEUED', 'OK', 'FAILED', 'TIMED OUT', 'CANCELLED', 'INTERRUPTED']];
  for (const r of rows) {
    out.push([r.name, r.kind, r.instanceId ?? '(cluster)', String(r.concurrency), String(r.active), String(r.queued), String(r.succeeded), String(r.failed), String(r.timedOut), String(r.cancelled), String(r.interrupted)]);
  }
  return table(out);
}

/** The flags by which a one-shot command reaches Redis (besides the environment). */
export const REDIS_FLAGS = {
  'redis-url': { type: 'string' },
  'redis-cluster-nodes': { type: 'string' },
  'redis-sentinels': { type: 'string' },
  'redis-sentinel-name': { type: 'string' },
  prefix: { type: 'string' },
} as const;

/**
 * The {@link REDIS_FLAGS} as `--help` shows them, each with its variable and the first
 * sentence of its description in the configuration table.
 */
export function redisFlagsHelp(): HelpOption[] {
  return Object.keys(REDIS_FLAGS).map((name) => {
    const e = settingByFlag(`--${name}`);
    return e === undefined ? { flag: `--${name} <value>`, description: '' } : helpOption(e, e.description.split(/(?<=\.)\s/)[0] ?? e.description);
  });
}

/** `leasehold status --help`. */
export function statusHelp(): CommandHelp {
  return {
    usage: ['leasehold status [--json] [--redis-url <url> | --redis-cluster-nodes <host:port,...> | --redis-sentinels <host:port,...> --redis-sentinel-name <name>] [--prefix <prefix>]'],
    summary:
      "Prints the cluster's job status straight from Redis: every job with its state, counters, last outcome and next due, then the live instances, then the executors of background tasks. Needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (or its flag).",
    options: [{ flag: '--json', description: 'Print exactly the JSON that `GET /manage/jobs` returns.' }, ...redisFlagsHelp()],
    notes: ['Exit status: 0 when read; 1 when Redis is unreachable; 2 for bad usage.'],
  };
}

/** Parsed values of {@link REDIS_FLAGS}. */
export type RedisFlagValues = { [K in keyof typeof REDIS_FLAGS]?: string };

/** A connection of a one-shot command, from its flags and the environment. */
export interface CommandRedis {
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly target: RedisTarget;
  /** The last connection error, for the message when Redis is unreachable. */
  lastError(): string | undefined;
}

/**
 * Connects a one-shot command (`status`, `forget`) to Redis from its flags and the
 * environment; a usage error (exit 2) when they are missing or contradict each other.
 */
export function commandRedis(command: string, usage: string, values: RedisFlagValues, env: NodeJS.ProcessEnv): CommandRedis | CommandResult {
  const url = values['redis-url'] ?? (env['REDIS_URL']?.trim() || undefined);
  const clusterNodes = values['redis-cluster-nodes'] ?? (env['REDIS_CLUSTER_NODES']?.trim() || undefined);
  const sentinels = values['redis-sentinels'] ?? (env['REDIS_SENTINELS']?.trim() || undefined);
  const sentinelName = values['redis-sentinel-name'] ?? (env['REDIS_SENTINEL_NAME']?.trim() || undefined);
  let prefix: string;
  try {
    const source = checkRedisSource({ url, clusterNodes, sentinels, sentinelName }, REDIS_SETTINGS, 'ignored');
    if (source === undefined) return { code: 2, stdout: '', stderr: `leasehold ${command}: REDIS_URL (or --redis-url), REDIS_CLUSTER_NODES or REDIS_SENTINELS is required\n${usage}` };
    prefix = checkPrefix(values.prefix ?? (env['LEASEHOLD_PREFIX']?.trim() || DEFAULT_PREFIX), settingName('prefix'));
  } catch (err) {
    if (!isLeaseholdError(err, ErrorCodes.invalidConfig)) throw err;
    return { code: 2, stdout: '', stderr: `leasehold ${command}: ${err.message}\n${usage}` };
  }
  const target: RedisTarget = url
    ? { url }
    : clusterNodes
      ? { clusterNodes: splitList(clusterNodes) }
      : { sentinels: splitList(sentinels ?? ''), sentinelName: sentinelName ?? '' };
  try {
    const keys = keyNames(prefix);
    const redis = createRedis({ target, role: 'stats' });
    let last: string | undefined;
    redis.on('error', (err: Error) => (last = err.message));
    return { redis, keys, target, lastError: () => last };
  } catch (err) {
    // The message names the bad input (a URL with its password hidden).
    return { code: 2, stdout: '', stderr: `leasehold ${command}: ${errorMessage(err)}\n` };
  }
}

/** Runs `leasehold status`. Exit 0 when read, 1 when Redis is unreachable, 2 for bad usage. */
export async function runStatus(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CommandResult> {
  let values: RedisFlagValues & { json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { json: { type: 'boolean' }, ...REDIS_FLAGS, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return { code: 2, stdout: '', stderr: `leasehold status: ${(err as Error).message.split('\n')[0]}\n${USAGE}` };
  }
  if (values.help) return { code: 0, stdout: renderHelp(statusHelp()), stderr: '' };
  const c = commandRedis('status', USAGE, values, env);
  if (!('redis' in c)) return c;
  try {
    await whenReady(c.redis, STATUS_CONNECT_TIMEOUT_MS);
    const status = await readCluster(c.redis, c.keys);
    if (values.json) return { code: 0, stdout: `${JSON.stringify(status)}\n`, stderr: '' };
    const { rows } = await readBoard(c.redis, c.keys.executors, systemClock.now());
    const executors = await mergeQueues(c.redis, c.keys.prefix, rows);
    return { code: 0, stdout: `${renderStatus(status)}\n${renderExecutors(executors)}`, stderr: '' };
  } catch (err) {
    const why = c.lastError() ?? errorMessage(err);
    return { code: 1, stdout: '', stderr: `leasehold status: Redis at ${describeTarget(c.target)} is unreachable: ${why}\n` };
  } finally {
    c.redis.disconnect();
  }
}
