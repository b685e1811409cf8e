/**
 * `leasehold status [--json]`: the cluster's status straight from Redis, as a table or as
 * exactly the JSON `GET /manage/jobs` returns.
 * @module
 */
import { parseArgs } from 'node:util';
import { createRedis, describeTarget, splitList, whenReady, type RedisClient, type RedisTarget } from '../redis/connection.js';
import { DEFAULT_PREFIX, keys as keyNames } from '../redis/keys.js';
import { readCluster } from '../status/read.js';
import type { ClusterStatus, JobStatus } from '../status/model.js';
import type { CommandResult } from './main.js';
import { ErrorCodes, errorMessage, isLeaseholdError } from '../errors.js';
import { checkPrefix, checkRedisSource } from '../config.js';
import { REDIS_SETTINGS, settingName } from './config.js';

const USAGE =
  'usage: leasehold status [--json] [--redis-url URL | --redis-cluster-nodes H:P,... | --redis-sentinels H:P,... --redis-sentinel-name N] [--prefix P]\n' +
  '       (or REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS with REDIS_SENTINEL_NAME, LEASEHOLD_PREFIX)\n';

/** How long `status` waits for Redis, in ms. */
const STATUS_CONNECT_TIMEOUT_MS = 3_000;

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

/** Runs `leasehold status`. Exit 0 when read, 1 when Redis is unreachable, 2 for bad usage. */
export async function runStatus(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CommandResult> {
  let values: {
    json?: boolean;
    'redis-url'?: string;
    'redis-cluster-nodes'?: string;
    'redis-sentinels'?: string;
    'redis-sentinel-name'?: string;
    prefix?: string;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        json: { type: 'boolean' },
        'redis-url': { type: 'string' },
        'redis-cluster-nodes': { type: 'string' },
        'redis-sentinels': { type: 'string' },
        'redis-sentinel-name': { type: 'string' },
        prefix: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return { code: 2, stdout: '', stderr: `leasehold status: ${(err as Error).message.split('\n')[0]}\n${USAGE}` };
  }
  if (values.help) return { code: 0, stdout: USAGE, stderr: '' };
  const url = values['redis-url'] ?? (env['REDIS_URL']?.trim() || undefined);
  const clusterNodes = values['redis-cluster-nodes'] ?? (env['REDIS_CLUSTER_NODES']?.trim() || undefined);
  const sentinels = values['redis-sentinels'] ?? (env['REDIS_SENTINELS']?.trim() || undefined);
  const sentinelName = values['redis-sentinel-name'] ?? (env['REDIS_SENTINEL_NAME']?.trim() || undefined);
  let prefix: string;
  try {
    const source = checkRedisSource({ url, clusterNodes, sentinels, sentinelName }, REDIS_SETTINGS, 'ignored');
    if (source === undefined) return { code: 2, stdout: '', stderr: `leasehold status: REDIS_URL (or --redis-url), REDIS_CLUSTER_NODES or REDIS_SENTINELS is required\n${USAGE}` };
    prefix = checkPrefix(values.prefix ?? (env['LEASEHOLD_PREFIX']?.trim() || DEFAULT_PREFIX), settingName('prefix'));
  } catch (err) {
    if (!isLeaseholdError(err, ErrorCodes.invalidConfig)) throw err;
    return { code: 2, stdout: '', stderr: `leasehold status: ${err.message}\n${USAGE}` };
  }
  const target: RedisTarget = url
    ? { url }
    : clusterNodes
      ? { clusterNodes: splitList(clusterNodes) }
      : { sentinels: splitList(sentinels ?? ''), sentinelName: sentinelName ?? '' };
  const keys = keyNames(prefix);
  let redis: RedisClient;
  try {
    redis = createRedis({ target, role: 'stats' });
  } catch (err) {
    // The message names the bad input (a URL with its password hidden).
    return { code: 2, stdout: '', stderr: `leasehold status: ${(err as Error).message}\n` };
  }
  let lastError: string | undefined;
  redis.on('error', (err: Error) => (lastError = err.message));
  try {
    await whenReady(redis, STATUS_CONNECT_TIMEOUT_MS);
    const status = await readCluster(redis, keys);
    return { code: 0, stdout: values.json ? `${JSON.stringify(status)}\n` : renderStatus(status), stderr: '' };
  } catch (err) {
    const why = lastError ?? (errorMessage(err));
    return { code: 1, stdout: '', stderr: `leasehold status: Redis at ${describeTarget(target)} is unreachable: ${why}\n` };
  } finally {
    redis.disconnect();
  }
}
