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
import { errorMessage, exitStatus } from '../errors.js';
import { checkToken } from '../http/auth.js';
import { systemClock } from '../clock.js';
import { createLogger } from '../log/logger.js';
import { packageVersion, type ManageApi } from '../create/command.js';
import type { Logger } from '../logger.js';
import type { CheckReport } from '../mcp/tools.js';
import { loadMcp } from '../mcp/load.js';
import { REDIS_FLAGS, STATUS_CONNECT_TIMEOUT_MS, commandRemote, redisFlagsHelp, type RedisFlagValues } from './status.js';
import { renderHelp, type CommandHelp } from './help.js';
import { CONFIG, helpOption } from './config.js';
import type { CommandResult } from './main.js';

const USAGE =
  'usage: leasehold mcp [--read-only] [--redis-url URL | --redis-cluster-nodes H:P,... | --redis-sentinels H:P,... --redis-sentinel-name N] [--prefix P]\n';

/** How long `check_jobs` may take to load and check a module, ms. */
const CHECK_TIMEOUT_MS = 60_000;

/** `leasehold mcp --help`. */
export function mcpHelp(): CommandHelp {
  // LOG_LEVEL as leasehold start reads it (its values and default), without start's flag.
  const logLevel = CONFIG.filter((e) => e.env === 'LOG_LEVEL').map((e) => ({ ...helpOption(e), flag: undefined, description: `${e.description} Logged to stderr (stdout carries the protocol).` }));
  return {
    usage: ['leasehold mcp [--read-only] [--redis-url <url> | --redis-cluster-nodes <host:port,...> | --redis-sentinels <host:port,...> --redis-sentinel-name <name>] [--prefix <prefix>]'],
    summary:
      "Serves leasehold's MCP tools over stdio for a coding agent, against the cluster's Redis: list_jobs, get_job, list_executors, run_job, pause_job, resume_job, cancel_run, preview_schedule and check_jobs. Every node also serves them (but check_jobs) over HTTP at /mcp.",
    options: [{ flag: '--read-only', description: 'Refuse the tools that change jobs (run_job, pause_job, resume_job, cancel_run) and check_jobs (loading a module runs its code).' }, ...redisFlagsHelp()],
    environment: [
      { env: 'LEASEHOLD_ADMIN_TOKEN', description: 'Without it the tools that change jobs are refused, as the admin routes of a node are; a token a node would refuse (shorter than 16 characters, or with spaces) stops the command (exit 2).' },
      ...logLevel,
    ],
    notes: ['Runs until its standard input closes. Exit status: 1 when Redis is unreachable at start; 2 for bad usage.'],
  };
}

/** Runs `leasehold check <path>` in a process of its own, so that every call loads the module afresh. */
async function checkModule(path: string): Promise<CheckReport> {
  const bin = fileURLToPath(new URL('../../bin/leasehold.js', import.meta.url));
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, 'check', path], { timeout: CHECK_TIMEOUT_MS });
    // A valid module may still have warnings (a class name that looks minified).
    return { ok: true, lines: [stdout.trimEnd(), ...(stderr.trim() === '' ? [] : stderr.trimEnd().split('\n'))] };
  } catch (err) {
    const stderr: unknown = typeof err === 'object' && err !== null && 'stderr' in err ? err.stderr : undefined;
    const text = typeof stderr === 'string' && stderr.trim() !== '' ? stderr.trimEnd() : errorMessage(err);
    return { ok: false, lines: text.split('\n') };
  }
}

/** `check_jobs` under `--read-only`. */
async function refuseCheck(): Promise<CheckReport> {
  return { ok: false, lines: ['check_jobs refused: this MCP server runs with --read-only, and checking a module runs its code'] };
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
  // Before Redis: a project without the MCP SDK hears which package to install.
  const { tools, transports } = await loadMcp();
  // Made once the usage is right: stderr, since stdout carries the protocol.
  let made: Logger | undefined;
  const log = (): Logger => (made ??= createLogger({ level: env['LOG_LEVEL'] ?? 'info', destination: pino.destination({ dest: 2, sync: true }) }));
  const c = commandRemote('mcp', USAGE, values, env, log);
  if ('code' in c) return c;
  try {
    // The value, not only its presence: a token a node would refuse opens no tool here either.
    checkToken(env['LEASEHOLD_ADMIN_TOKEN']?.trim(), 'LEASEHOLD_ADMIN_TOKEN');
  } catch (err) {
    await c.close();
    return { code: exitStatus(err), stdout: '', stderr: `leasehold mcp: ${errorMessage(err)}\n` };
  }
  // Loading a module runs its code: not for a server that must change nothing.
  const checkInChild = values['read-only'] ? refuseCheck : checkModule;
  const logger = log();
  let api: ManageApi;
  try {
    api = await c.manage(STATUS_CONNECT_TIMEOUT_MS, logger);
  } catch (err) {
    await c.close();
    return { code: 1, stdout: '', stderr: `leasehold mcp: Redis at ${c.where} is unreachable: ${errorMessage(err)}\n` };
  }
  const adminToken = env['LEASEHOLD_ADMIN_TOKEN']?.trim();
  const refuseMutation = values['read-only']
    ? 'this MCP server runs with --read-only'
    : adminToken
      ? undefined
      : 'no admin token is configured (LEASEHOLD_ADMIN_TOKEN in the environment of leasehold mcp), so the tools that change jobs are disabled';
  const executors = (): Promise<readonly object[]> => c.executors((queue, err) => logger.warn({ error: errorMessage(err), executor: queue }, 'the counts of queue "%s" could not be read; shown as 0', queue));
  const server = tools.createMcpServer({ api, refuseMutation, checkJobs: checkInChild, now: () => systemClock.now(), version: packageVersion(), executors });
  const transport = new transports.StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.connect(transport);
  logger.info({ redis: c.where, readOnly: values['read-only'] === true, mutations: refuseMutation === undefined }, 'leasehold MCP server on stdio');
  await closed;
  await server.close();
  await c.close();
  return 0;
}
