/**
 * `leasehold forget <jobId>`: removes the keys of a job that left the code of every node
 * (its status shows `orphaned`); refused while a live node registers it.
 * @module
 */
import { parseArgs } from 'node:util';
import { errorMessage } from '../errors.js';
import { forgetRefusal } from '../create/command.js';
import { commandRemote, redisFlagsHelp, REDIS_FLAGS, STATUS_CONNECT_TIMEOUT_MS, type RedisFlagValues } from './status.js';
import type { CommandResult } from './main.js';
import { renderHelp, type CommandHelp } from './help.js';

const USAGE =
  'usage: leasehold forget <jobId> [--redis-url URL | --redis-cluster-nodes H:P,... | --redis-sentinels H:P,... --redis-sentinel-name N] [--prefix P]\n' +
  '       removes the stats, recent runs, claim state and settings of a job that no live node registers any more\n' +
  '       (or REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS with REDIS_SENTINEL_NAME, LEASEHOLD_PREFIX)\n';

/** `leasehold forget --help`. */
export function forgetHelp(): CommandHelp {
  return {
    usage: ['leasehold forget <jobId> [--redis-url <url> | --redis-cluster-nodes <host:port,...> | --redis-sentinels <host:port,...> --redis-sentinel-name <name>] [--prefix <prefix>]'],
    summary:
      'Removes the stats, per-instance rows, recent runs, claim state and settings of a job that left the code of every node (its status shows orphaned). Refused while a live node registers the job. Needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (or its flag).',
    options: redisFlagsHelp(),
    notes: ['Exit status: 0 when forgotten; 1 when refused, unknown, or Redis fails; 2 for bad usage.'],
  };
}

/** Runs `leasehold forget`: exit 0 when forgotten, 1 when refused or Redis is unreachable, 2 for bad usage. */
export async function runForget(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CommandResult> {
  let values: RedisFlagValues & { help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args, options: { ...REDIS_FLAGS, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true }));
  } catch (err) {
    return { code: 2, stdout: '', stderr: `leasehold forget: ${errorMessage(err).split('\n')[0]}\n${USAGE}` };
  }
  if (values.help) return { code: 0, stdout: renderHelp(forgetHelp()), stderr: '' };
  const [jobId, ...more] = positionals;
  if (!jobId || more.length > 0) return { code: 2, stdout: '', stderr: `leasehold forget: give exactly one job id\n${USAGE}` };
  const c = commandRemote('forget', USAGE, values, env);
  if ('code' in c) return c;
  try {
    await c.ready(STATUS_CONNECT_TIMEOUT_MS);
    const r = await c.forget(jobId);
    if (r.kind === 'unknown') return { code: 1, stdout: '', stderr: `leasehold forget: no job ${JSON.stringify(jobId)} in Redis\n` };
    if (r.kind === 'live') return { code: 1, stdout: '', stderr: `leasehold forget: ${forgetRefusal(jobId, r)}\n` };
    return { code: 0, stdout: `forgot job ${JSON.stringify(jobId)} (${r.keys} keys removed)\n`, stderr: '' };
  } catch (err) {
    const why = c.lastError() ?? errorMessage(err);
    return { code: 1, stdout: '', stderr: `leasehold forget: Redis at ${c.where} failed: ${why}\n` };
  } finally {
    await c.close();
  }
}
