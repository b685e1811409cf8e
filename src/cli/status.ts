/**
 * `leasehold status [--json] [--limit N] [--cursor C] [--state S] [--q TEXT]`: the cluster's
 * status straight from Redis, as a table or as exactly the JSON `GET /manage/jobs` returns; a
 * page of it (cut as the route cuts it) when a paging flag is given, or when the installation
 * is too large for one answer.
 * @module
 */
import { parseArgs } from 'node:util';
import { DEFAULT_PAGE_SIZE, DEFAULT_PREFIX, MAX_UNPAGED_JOBS, asksForPage, openRemote, pageOf, parseJobsQuery, splitList, type ClusterStatus, type JobsPage, type JobsQuery, type ExecutorStats, type JobStatus, type RedisTarget, type RemoteStatus } from '../create/command.js';
import type { CommandResult } from './main.js';
import type { Logger } from '../logger.js';
import { errorMessage, exitStatus, isLeaseholdError } from '../errors.js';
import { checkPrefix, checkRedisSource } from '../config.js';
import { REDIS_SETTINGS, helpOption, settingByFlag, settingName } from './config.js';
import { renderHelp, type CommandHelp, type HelpOption } from './help.js';

const USAGE =
  'usage: leasehold status [--json] [--limit N] [--cursor C] [--state S] [--q TEXT] [--redis-url URL | --redis-cluster-nodes H:P,... | --redis-sentinels H:P,... --redis-sentinel-name N] [--prefix P]\n' +
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
  return j.failed + j.timedOut + j.lockLost + j.lost;
}

/** Renders the status as a readable table: jobs, their problems, then the live instances. */
export function renderStatus(s: ClusterStatus): string {
  let out = s.problems.map((p) => `${p.code}: ${p.message}\n\n`).join('');
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

/** The paging flags of `status`, as `GET /manage/jobs?limit=&cursor=&state=&q=` takes them. */
const PAGE_FLAGS = { limit: { type: 'string' }, cursor: { type: 'string' }, state: { type: 'string' }, q: { type: 'string' } } as const;
type PageFlagValues = { [K in keyof typeof PAGE_FLAGS]?: string };

/** A flag's value as a shell reads it back: bare when it is plain, else single-quoted. */
function shellWord(v: string): string {
  return /^[\w.:,/@%+=-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`;
}

/** The line under a page: how many jobs it holds of how many, and the command for the next. */
export function moreLine(page: JobsPage, query: JobsQuery): string {
  const filters = `${query.state ? ` --state ${query.state}` : ''}${query.q ? ` --q ${shellWord(query.q)}` : ''}`;
  const of = `${page.jobs.length} of ${page.total} job(s)${query.state || query.q ? ' that match' : ''}`;
  if (page.nextCursor === null) return `${of} shown: the last page`;
  return `${of} shown; next page: leasehold status --limit ${query.limit}${filters} --cursor ${page.nextCursor}`;
}

/** Renders a page: its jobs and their problems, the line naming the next page, the live instances. */
export function renderPage(page: JobsPage, query: JobsQuery): string {
  const jobs = page.jobs.length === 0 ? (page.total === 0 ? 'no job matches\n' : 'no job after this cursor\n') : renderStatus({ generatedAt: page.generatedAt, jobs: page.jobs, instances: [], problems: [] }).replace(/\nno live instances\n$/, '');
  const instances = renderStatus({ generatedAt: page.generatedAt, jobs: [], instances: page.instances, problems: page.problems }).replace(/^no jobs registered\n\n/, '');
  return `${jobs}\n${moreLine(page, query)}\n\n${instances}`;
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
    usage: ['leasehold status [--json] [--limit <n>] [--cursor <cursor>] [--state <state>] [--q <text>] [--redis-url <url> | --redis-cluster-nodes <host:port,...> | --redis-sentinels <host:port,...> --redis-sentinel-name <name>] [--prefix <prefix>]'],
    summary:
      `Prints the cluster's job status straight from Redis: every job with its state, counters, last outcome and next due, then the live instances, then the executors of background tasks. Needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (or its flag). Any of --limit, --cursor, --state, --q prints one page of the jobs, in id order, and the command for the next; an installation of more than ${MAX_UNPAGED_JOBS.toLocaleString('en-US')} jobs prints its first page without them.`,
    options: [
      { flag: '--json', description: 'Print exactly the JSON that `GET /manage/jobs` returns (with a paging flag, or above the size of one answer, the page as `GET /manage/jobs?limit=` returns it).' },
      { flag: '--limit <n>', description: `At most this many jobs, 1 to 1000 (default ${DEFAULT_PAGE_SIZE}).` },
      { flag: '--cursor <cursor>', description: 'Start after the page that printed this cursor.' },
      { flag: '--state <state>', description: 'Only jobs in this state: ok, degraded, invalidSchedule, paused or orphaned.' },
      { flag: '--q <text>', description: 'Only jobs whose id or description holds this text, ignoring case.' },
      ...redisFlagsHelp(),
    ],
    notes: ['Exit status: 0 when read; 1 when Redis is unreachable; 2 for bad usage (a malformed paging flag names itself).'],
  };
}

/** Parsed values of {@link REDIS_FLAGS}. */
export type RedisFlagValues = { [K in keyof typeof REDIS_FLAGS]?: string };

/**
 * Opens the cluster's status for a command (`status`, `forget`, `mcp`) from its flags and the
 * environment; a usage error (exit 2) when they are missing or contradict each other. `logger`
 * (of `mcp`, made once the usage is right) gets the connections' errors.
 */
export function commandRemote(command: string, usage: string, values: RedisFlagValues, env: NodeJS.ProcessEnv, logger?: () => Logger): RemoteStatus | CommandResult {
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
    if (!isLeaseholdError(err) || exitStatus(err) !== 2) throw err;
    return { code: 2, stdout: '', stderr: `leasehold ${command}: ${err.message}\n${usage}` };
  }
  const target: RedisTarget = url
    ? { url }
    : clusterNodes
      ? { clusterNodes: splitList(clusterNodes) }
      : { sentinels: splitList(sentinels ?? ''), sentinelName: sentinelName ?? '' };
  try {
    return openRemote({ target, prefix, ...(logger ? { logger: logger() } : {}) });
  } catch (err) {
    // The message names the bad input (a URL with its password hidden).
    return { code: 2, stdout: '', stderr: `leasehold ${command}: ${errorMessage(err)}\n` };
  }
}

/** Runs `leasehold status`. Exit 0 when read, 1 when Redis is unreachable, 2 for bad usage. */
export async function runStatus(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CommandResult> {
  let values: RedisFlagValues & PageFlagValues & { json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { json: { type: 'boolean' }, ...PAGE_FLAGS, ...REDIS_FLAGS, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return { code: 2, stdout: '', stderr: `leasehold status: ${(err as Error).message.split('\n')[0]}\n${USAGE}` };
  }
  if (values.help) return { code: 0, stdout: renderHelp(statusHelp()), stderr: '' };
  const raw = { limit: values.limit, cursor: values.cursor, state: values.state, q: values.q };
  let query: JobsQuery | undefined;
  try {
    if (asksForPage(raw)) query = parseJobsQuery(raw);
  } catch (err) {
    if (!isLeaseholdError(err)) throw err;
    return { code: 2, stdout: '', stderr: `leasehold status: --${err.message}\n${USAGE}` };
  }
  const c = commandRemote('status', USAGE, values, env);
  if ('code' in c) return c;
  try {
    await c.ready(STATUS_CONNECT_TIMEOUT_MS);
    const status = await c.status();
    // Above the size of one answer, the first page, as GET /manage/jobs?limit= gives it.
    const page = query ?? (status.jobs.length > MAX_UNPAGED_JOBS ? { limit: DEFAULT_PAGE_SIZE } : undefined);
    const shown = page === undefined ? undefined : pageOf(status, page);
    if (values.json) return { code: 0, stdout: `${JSON.stringify(shown ?? status)}\n`, stderr: shown && query === undefined ? `leasehold status: ${moreLine(shown, page ?? { limit: DEFAULT_PAGE_SIZE })}\n` : '' };
    let notes = '';
    const executors = await c.executors((queue, err) => (notes += `leasehold status: the counts of queue "${queue}" could not be read (${errorMessage(err)}); shown as 0\n`));
    const jobs = shown && page ? renderPage(shown, page) : renderStatus(status);
    if (status.jobs.length === 0 && status.instances.length === 0 && executors.length === 0) {
      notes += `leasehold status: nothing under the prefix "${c.prefix}" at ${c.where}: do the nodes use another prefix (--prefix, LEASEHOLD_PREFIX) or another Redis?\n`;
    }
    return { code: 0, stdout: `${jobs}\n${renderExecutors(executors)}`, stderr: notes };
  } catch (err) {
    const why = c.lastError() ?? errorMessage(err);
    return { code: 1, stdout: '', stderr: `leasehold status: Redis at ${c.where} is unreachable: ${why}\n` };
  } finally {
    await c.close();
  }
}
