/**
 * `leasehold mcp`: leasehold's MCP tools over stdio, for a coding agent, against the Redis of
 * the nodes (the same flags and variables as `leasehold status`). The tools that change jobs
 * need LEASEHOLD_ADMIN_TOKEN in its environment and are refused under `--read-only`.
 * @module
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import pino from 'pino';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { errorMessage } from '../errors.js';
import { systemClock } from '../clock.js';
import { createLogger } from '../log/logger.js';
import { describeTarget } from '../redis/target.js';
import { closeRedis } from '../redis/connection.js';
import { remoteManageApi } from '../status/remote.js';
import { packageVersion } from '../status/index.js';
import { createMcpServer, type CheckReport } from '../mcp/tools.js';
import { mergeQueues, readBoard } from '../tasks/index.js';
import { REDIS_FLAGS, STATUS_CONNECT_TIMEOUT_MS, commandRedis, redisFlagsHelp, type RedisFlagValues } from './status.js';
import { renderHelp, type CommandHelp } from './help.js';
import type { CommandResult } from './main.js';

const USAGE =
  'usage: leasehold mcp [--read-only] [--redis-url URL | --redis-cluster-nodes H:P,... | --redis-sentinels H:P,... --redis-sentinel-name N] [--prefix P]\n';

/** How long `check_jobs` may take to load and check a module, ms. */
const CHECK_TIMEOUT_MS = 60_000;

/** `leasehold mcp --help`. */
export function mcpHelp(): CommandHelp {
  return {
    usage: ['leasehold mcp [--read-only] [--redis-url <url> | --redis-cluster-nodes <host:port,...> | --redis-sentinels <host:port,...> --redis-sentinel-name <name>] [--prefix <prefix>]'],
    summary:
      "Serves leasehold's MCP tools over stdio for a coding agent, against the cluster's Redis: list_jobs, get_job, run_job, pause_job, resume_job, cancel_run, preview_schedule and check_jobs. Every node also serves them (but check_jobs) over HTTP at /mcp.",
    options: [{ flag: '--read-only', description: 'Refuse the tools that change jobs (run_job, pause_job, resume_job, cancel_run).' }, ...redisFlagsHelp()],
    environment: [{ flag: 'LEASEHOLD_ADMIN_TOKEN', description: 'Without it the tools that change jobs are refused, as the admin routes of a node are. LOG_LEVEL sets what is logged to stderr (stdout carries the protocol).' }],
    notes: ['Runs until its standard input closes. Exit status: 1 when Redis is unreachable at start; 2 for bad usage.'],
  };
}

/** Runs `leasehold check <path>` in a process of its own, so that every call loads the module afresh. */
async function checkInChild(path: string): Promise<CheckReport> {
  const bin = fileURLToPath(new URL('../../bin/leasehold.js', import.meta.url));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'check', path], { timeout: CHECK_TIMEOUT_MS });
    return { ok: true, lines: [stdout.trimEnd()] };
  } catch (err) {
    const stderr: unknown = typeof err === 'object' && err !== null && 'stderr' in err ? err.stderr : undefined;
    const text = typeof stderr === 'string' && stderr.trim() !== '' ? stderr.trimEnd() : errorMessage(err);
    return { ok: false, lines: text.split('\n') };
  }
}

/** Runs `leasehold mcp` until stdin closes; resolves to the exit code. */
export async function runMcp(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CommandResult | number> {
  let values: RedisFlagValues & { 'read-only'?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({ args, options: { 'read-only': { type: 'boolean' }, ...REDIS_FLAGS, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    return { code: 2, stdout: '', stderr: `leasehold mcp: ${(err as Error).message.split('\n')[0]}\n${USAGE}` };
  }
  if (values.help) return { code: 0, stdout: renderHelp(mcpHelp()), stderr: '' };
  const c = commandRedis('mcp', USAGE, values, env);
  if (!('redis' in c)) return c;
  const logger = createLogger({ level: env['LOG_LEVEL'] ?? 'info', destination: pino.destination({ dest: 2, sync: true }) });
  const remote = remoteManageApi({ redis: { target: c.target }, keys: c.keys, logger });
  try {
    await remote.start(STATUS_CONNECT_TIMEOUT_MS);
  } catch (err) {
    await remote.stop();
    await closeRedis(c.redis);
    return { code: 1, stdout: '', stderr: `leasehold mcp: Redis at ${describeTarget(c.target)} is unreachable: ${errorMessage(err)}\n` };
  }
  const adminToken = env['LEASEHOLD_ADMIN_TOKEN']?.trim();
  const refuseMutation = values['read-only']
    ? 'this MCP server runs with --read-only'
    : adminToken
      ? undefined
      : 'no admin token is configured (LEASEHOLD_ADMIN_TOKEN in the environment of leasehold mcp), so the tools that change jobs are disabled';
  const server = createMcpServer({ api: remote.api, refuseMutation, checkJobs: checkInChild, now: () => systemClock.now(), version: packageVersion(), executors: async () => mergeQueues(c.redis, c.keys.prefix, (await readBoard(c.redis, c.keys.executors, systemClock.now())).rows) });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.connect(transport);
  logger.info({ redis: describeTarget(c.target), readOnly: values['read-only'] === true, mutations: refuseMutation === undefined }, 'leasehold MCP server on stdio');
  await closed;
  await server.close();
  await remote.stop();
  await closeRedis(c.redis);
  return 0;
}
