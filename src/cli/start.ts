/**
 * `leasehold start --jobs <module>`: runs a node until SIGTERM or SIGINT.
 * @module
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { ErrorCodes, LeaseholdError, errorMessage, isLeaseholdError } from '../errors.js';
import { createLogger, logFormat } from '../log/logger.js';
import type { JobDefinition } from '../schedule/job.js';
import { parseDuration } from '../schedule/duration.js';
import { assertJobs, checkJobs } from '../schedule/job-list.js';
import { bindTask, expandExport } from '../decorators/register.js';
import { asyncCallsOf, createRunner, resolveRunnerOptions, type RunnerOptions } from '../create/index.js';
import { CONFIG, helpOption, readConfig } from './config.js';
import type { CommandHelp } from './help.js';
import { loadJobsModule, loadModuleExtras } from './load.js';
import { startPrivateRedis, type PrivateRedis } from './private-redis.js';
import { watchStartSignals, type StartSignals } from './start-signals.js';
import { checkPortFree, startHttpServer } from '../http/server.js';
import { redactUrl, splitList, type TaskDefinition } from '../create/command.js';
import { every, systemClock } from '../clock.js';
import type { Logger } from '../logger.js';

/** How often a node checks that the process that started it is still there, ms. */
const PARENT_CHECK_MS = 1_000;

/** How long a stopped node waits for its process to end by itself before it ends it, ms. */
const HELD_EXIT_MS = 2_000;

/**
 * Everything the node opened is closed: the process ends by itself unless the jobs module holds
 * something of its own open (a database pool, a client, a server). Then it is ended anyway
 * {@link HELD_EXIT_MS} later, with `code`, and the log says what was left open: a process manager
 * would otherwise wait for its own timeout and kill it, which reads like a crash.
 */
function exitIfHeld(logger: Logger, code: number): void {
  systemClock.setTimer(() => {
    const held = [...new Set(process.getActiveResourcesInfo())].join(', ');
    logger.warn({ held }, 'the node has stopped, but its jobs module holds %s open: exiting anyway', held);
    process.exit(code);
  }, HELD_EXIT_MS, true);
}

/** Ends a start that a signal interrupted: stops the private Redis, if it started, and says so; exit code 0. */
async function stopUnstarted(logger: Logger, signals: StartSignals, privateRedis: PrivateRedis | undefined): Promise<number> {
  await privateRedis?.stop();
  signals.end();
  logger.info({ signal: signals.received }, 'not started: %s came while starting', signals.received);
  exitIfHeld(logger, 0);
  return 0;
}

/** `leasehold start --help`: every flag and variable of {@link CONFIG}, as the parser reads them. */
export function startHelp(): CommandHelp {
  return {
    usage: ['leasehold start --jobs <module> [options]'],
    summary:
      'Runs a node with the jobs of a module until SIGTERM or SIGINT: instance jobs on this node, installation jobs once per tick for every node that shares the Redis, and the status API over HTTP.',
    options: CONFIG.filter((e) => e.flag !== undefined).map((e) => helpOption(e)),
    environment: CONFIG.filter((e) => e.flag === undefined).map((e) => helpOption(e)),
    notes: [
      'On SIGTERM or SIGINT the node stops its timer, waits the shutdown grace for runs in progress, aborts the rest, and exits 0. A signal while it starts (its jobs module loading, Redis connecting) stops the start after the step under way, also with 0; a second one exits at once, 130. It exits non-zero when it cannot start: 2 for a bad flag or variable, or its HTTP port taken (checked before any job starts).',
      'A rejection nobody handles in job or task code is logged with its job or task and counted (leasehold_unhandled_errors_total); the node keeps running. An exception nobody catches stops the node as SIGTERM does, and it exits 1.',
    ],
  };
}

function parseFlags(args: string[]): Record<string, string | boolean | undefined> {
  const options: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const e of CONFIG) if (e.flag) options[e.flag.slice(2)] = { type: e.boolean ? 'boolean' : 'string' };
  try {
    const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: true });
    if (positionals.length > 0) throw new Error(`unexpected argument ${JSON.stringify(positionals[0])}`);
    return values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `start: ${(err as Error).message.split('\n')[0]}`);
  }
}

/**
 * Every check (including duplicate ids) before anything starts. Like `check`, names every
 * invalid job, one a line; the error has the code of the first (which sets the exit status).
 */
function checkAllJobs(jobs: unknown[], decorated: readonly LeaseholdError[]): void {
  try {
    const firstDecorated = decorated[0];
    if (firstDecorated) throw firstDecorated;
    assertJobs(jobs);
  } catch (first) {
    if (!isLeaseholdError(first)) throw first;
    const all = [...decorated.map((e) => e.message), ...checkJobs(jobs)];
    throw new LeaseholdError(first.code, all.length > 1 ? all.join('\nleasehold: ') : first.message, { cause: first });
  }
}

/** The error of a node that cannot serve HTTP on its host and port. */
function httpProblem(config: { readonly host: string; readonly port: number }, err: unknown): LeaseholdError {
  return new LeaseholdError(ErrorCodes.invalidConfig, `cannot serve HTTP on ${config.host}:${config.port}: ${errorMessage(err)}`);
}

/** A job with `thread: 'worker'` and no module of its own. */
function onWorkerThread(job: unknown): boolean {
  return typeof job === 'object' && job !== null && (job as JobDefinition).thread === 'worker' && (job as JobDefinition).module === undefined;
}

/** The Redis options of the configuration. */
function redisOf(config: ReturnType<typeof readConfig>): Pick<RunnerOptions, 'redisUrl' | 'redisClusterNodes' | 'redisSentinels' | 'redisSentinelName'> {
  return {
    ...(config.redisUrl ? { redisUrl: config.redisUrl } : {}),
    ...(config.redisClusterNodes ? { redisClusterNodes: splitList(config.redisClusterNodes) } : {}),
    ...(config.redisSentinels ? { redisSentinels: splitList(config.redisSentinels), redisSentinelName: config.redisSentinelName } : {}),
  };
}

/** Runs a node; resolves to the exit code once it has stopped. */
export async function runStart(args: string[]): Promise<number> {
  const config = readConfig(parseFlags(args), process.env);
  if (!config.jobs) throw new LeaseholdError(ErrorCodes.invalidConfig, 'start: --jobs <module> is required');
  const logger = createLogger({ level: config.logLevel, format: logFormat(config.logFormat, process.stdout.isTTY === true) });
  const signals = watchStartSignals(logger);
  const { jobs, tasks: asyncTasks, errors: decorated, warnings } = expandExport(await loadJobsModule(config.jobs), resolve(config.jobs));
  for (const warning of warnings) logger.warn(warning);
  checkAllJobs(jobs, decorated);
  const extras = await loadModuleExtras(config.jobs);
  // A Redis that cannot be reached as configured is named before the port is tried: the port
  // may be taken as well (the node it belongs to), and then says nothing of this one's mistake.
  resolveRunnerOptions({ logger, ...redisOf(config) });
  // A port taken (by another node, most often) ends the start before anything runs.
  await checkPortFree(config.host, config.port).catch((err: unknown) => {
    throw httpProblem(config, err);
  });
  let privateRedis: PrivateRedis | undefined;
  if (config.privateRedis && !config.redisUrl && !config.redisClusterNodes && !config.redisSentinels) {
    privateRedis = await startPrivateRedis();
    config.redisUrl = privateRedis.url;
    logger.info({ redis: privateRedis.url }, 'REDIS_URL is not set: started a private redis-server on %s (no persistence; it stops with this node)', privateRedis.url);
  }
  if (signals.received) return stopUnstarted(logger, signals, privateRedis);
  // From here to the runner's start nothing waits: a signal is heard once the runner starts, and stops it then.
  const withRedis = Boolean(config.redisUrl || config.redisClusterNodes || config.redisSentinels);
  const runner = createRunner({
    logger,
    // --local says this node runs alone (a Redis given as well wins: it is what the node shares).
    ...(config.local && !withRedis ? { local: true } : {}),
    prefix: config.prefix,
    shutdownGrace: parseDuration(config.shutdownGrace),
    ...(config.instanceId ? { instanceId: config.instanceId } : {}),
    ...redisOf(config),
    ...(config.adminToken ? { adminToken: config.adminToken } : {}),
    ...(config.readToken ? { readToken: config.readToken } : {}),
    ...(config.metricsToken ? { metricsToken: config.metricsToken } : {}),
    ...(config.cookieSecret ? { cookieSecret: config.cookieSecret } : {}),
    ...(config.mcpAllowedOrigins ? { mcpAllowedOrigins: splitList(config.mcpAllowedOrigins) } : {}),
    ...(config.recentRuns !== undefined ? { recentRuns: config.recentRuns } : {}),
    ...(config.metricsJobLimit !== undefined ? { metricsJobLimit: config.metricsJobLimit } : {}),
    ...(config.handoffDelay !== undefined ? { handoffDelay: parseDuration(config.handoffDelay) } : {}),
    ...(config.eventsMaxClients !== undefined ? { eventsMaxClients: config.eventsMaxClients } : {}),
    ...(extras.executors !== undefined ? { executors: extras.executors as RunnerOptions['executors'] } : {}),
    // Careless job code cannot take the node down: see RunnerOptions.unhandled.
    unhandled: 'shutdown',
  });
  // A job on a worker thread is loaded there from the jobs module.
  for (const job of jobs) runner.add(onWorkerThread(job) ? { ...(job as JobDefinition), module: extras.url } : (job as JobDefinition));
  for (const task of extras.tasks) runner.addTask(task as TaskDefinition);
  // The @Async methods of the exported instances: their calls submit to this node's executors
  // (a worker executor's thread loads the method from the jobs module, as a worker job's does).
  for (const task of asyncTasks) {
    const definition = task.definition.module === undefined ? { ...task.definition, module: extras.url } : task.definition;
    runner.addTask(definition as TaskDefinition);
    bindTask(task, asyncCallsOf(runner));
  }
  await runner.start();
  let http: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    http = await startHttpServer({ host: config.host, port: config.port, trustProxy: config.trustProxy, routes: runner.routes, logger });
  } catch (err) {
    // Without its HTTP server the node is not operable: stop what started and say why.
    await runner.stop();
    await privateRedis?.stop();
    throw httpProblem(config, err);
  }
  const base = `http://localhost:${http.port}`;
  const redisShown = config.redisUrl ? redactUrl(config.redisUrl) : config.redisClusterNodes ? `cluster ${config.redisClusterNodes}` : config.redisSentinels ? `sentinels ${config.redisSentinels}` : 'none (installation jobs run on this node alone)';
  logger.info({ url: `${base}/manage/jobs`, page: `${base}/manage/ui`, metrics: `${base}/metrics`, redis: redisShown }, 'status: %s/manage/jobs · page: %s/manage/ui · metrics: %s/metrics · Redis: %s', base, base, base, redisShown);

  return new Promise<number>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals | 'parent gone'): void => {
      if (stopping) {
        if (signal === 'parent gone') return;
        logger.warn({ signal }, 'second %s: exiting without waiting', signal);
        process.exit(130);
      }
      stopping = true;
      parentWatch.stop();
      if (signal === 'parent gone') logger.info({ parentPid }, 'the process that started this node (pid %d) is gone; shutting down', parentPid);
      else logger.info({ signal }, 'received %s, shutting down', signal);
      runner
        .stop()
        .then(() => http.close())
        .then(
        () => {
          process.off('SIGTERM', onSignal);
          process.off('SIGINT', onSignal);
          void (privateRedis?.stop() ?? Promise.resolve()).then(() => {
            exitIfHeld(logger, 0);
            resolve(0);
          });
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          exitIfHeld(logger, 1);
          resolve(1);
        },
      );
    };
    // Started through npm or npx, the node's parent may be killed without passing the signal
    // on: the node is then re-parented, and stops as on SIGTERM (its private Redis with it).
    const parentPid = process.ppid;
    const parentWatch = every(systemClock, PARENT_CHECK_MS, () => {
      if (parentPid > 1 && process.ppid !== parentPid) onSignal('parent gone');
    });
    // From here the node's own handler hears the signals, and one that came while it started stops it now.
    signals.handOver(onSignal);
  });
}
