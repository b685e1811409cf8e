/**
 * The composition root: `createRunner` builds a node (`node.ts`: the scheduler with its ports,
 * the coordinator, with Redis the status layer, the metrics and the routes) over the connections
 * made in `connections.ts`, and adds the tasks, the log listener and the tracing. Nothing below
 * this module knows the others; each takes what it needs as a port, and the scheduler emits
 * events to listeners. The command line's status is assembled beside it (`command.ts`).
 * `docs/architecture.md` draws the layers.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage, leaseholdError } from '../errors.js';
import { completeClock } from '../clock.js';
import { readDuration } from '../schedule/duration.js';
import type { JobDefinition, JobDefinitionLike } from '../schedule/job.js';
import { jobInfo, type JobInfo } from '../runner/runner.js';
import { describeTarget } from '../redis/target.js';
import { keys as keyNames } from '../redis/keys.js';
import { RunFieldsMemo, attachLogListener, logStreakChange } from '../log/listener.js';
import { Registrations } from '../decorators/register.js';
import { attachTracing, runTracer } from '../trace/tracer.js';
import { attachTaskTracing } from '../trace/tasks.js';
import { ExecutorBoard, Tasks, ignoredFieldsMessage, queueExecutor, resolveExecutors, withThread, type ExecutorStats, type TaskDefinition, type TaskHandle } from '../tasks/index.js';
import { resolveRunnerOptions, type Runner, type RunnerOptions } from './options.js';
import { createNode } from './node.js';
import { runOrigins, taskOrigins } from './origin.js';
import { guardProcess, type UnhandledCounts } from './unhandled.js';
import type { AsyncCall } from '../decorators/async.js';

export { resolveRunnerOptions, type MetricsRegistry, type Runner, type RunnerOptions } from './options.js';
export { UnhandledModes, type UnhandledMode } from './unhandled.js';
export { createNode, type Node, type NodeOptions, type StatusNode } from './node.js';

/**
 * Creates a runner. Add jobs, then `await runner.start()`; `await runner.stop()` on shutdown.
 * @throws LeaseholdError `invalidConfig` for a bad option.
 */
export function createRunner(opts: RunnerOptions = {}): Runner {
  const { instanceId, shutdownGraceMs, logger, prefix, target, unhandled, local } = resolveRunnerOptions(opts);
  const clock = completeClock(opts.clock);
  const redis = opts.redis ? { client: opts.redis } : target ? { target } : undefined;
  const executors = resolveExecutors(opts.executors, process.env, (i) => logger.warn({ executor: i.executor, variable: i.variable, kind: i.to, ignored: i.ignored }, ignoredFieldsMessage(i)));
  const handoffMs = redis && opts.handoffDelay !== undefined ? readDuration(opts.handoffDelay, 'handoffDelay', true) : undefined;
  const runHooks = runTracer();
  // An installation run's trace fields, for its line from the cluster's streak (logged after its span ended).
  const streakFields = new RunFieldsMemo();
  // With `unhandled`, each run and task runs in an origin that names it (see unhandled.ts).
  const owner = {};
  const unhandledCounts: UnhandledCounts = { rejection: 0, exception: 0 };
  const node = createNode({
    instanceId,
    logger,
    shutdownGraceMs,
    clock,
    prefix,
    ...(redis ? { redis, coordinator: 'redis' as const } : {}),
    hooks: unhandled === 'off' ? runHooks : runOrigins(runHooks, owner),
    unhandled: () => unhandledCounts,
    // Called by runs only, once the tasks below exist.
    submit: (task, payload, options) => tasks.submit(task as unknown as TaskDefinition | string, payload, options) as Promise<TaskHandle<never>>,
    executors: () => tasks.clusterStats(),
    executorFigures: async () => {
      try {
        return (await tasks.stats()).map((e) => ({ executor: e.name, queued: e.queued, active: e.active }));
      } catch (err) {
        logger.debug({ error: errorMessage(err) }, 'the executors are left out of this scrape: reading their figures failed');
        return [];
      }
    },
    adminToken: opts.adminToken,
    readToken: opts.readToken,
    metricsToken: opts.metricsToken,
    cookieSecret: opts.cookieSecret,
    mcpAllowedOrigins: opts.mcpAllowedOrigins,
    failingStreak: opts.failingStreak,
    recentRuns: opts.recentRuns,
    metricsJobLimit: opts.metricsJobLimit,
    handoffMs,
    eventsMaxClients: opts.eventsMaxClients,
    // With Redis, an installation job's first failure and recovery follow the installation's streak.
    onStreak: (change) => logStreakChange(logger, change, streakFields),
  });
  const { core, metrics, connections } = node;
  const tracing = attachTracing(core, runHooks);
  const taskTracing = attachTaskTracing(core);
  const detachLog = attachLogListener(core, logger, { runFields: tracing.logFields, clusterStreaks: redis !== undefined, streakFields });
  const tasks: Tasks = new Tasks({
    instanceId,
    clock,
    logger,
    emitter: core.emitter,
    hooks: unhandled === 'off' ? taskTracing.hooks : taskOrigins(taskTracing.hooks, owner),
    executors,
    prefix,
    ...(connections
      ? {
          queue: queueExecutor((executor) => connections.open('queue', executor), prefix),
          board: new ExecutorBoard({ connect: () => connections.open('board'), key: keyNames(prefix).executors, instanceId, clock, logger, rows: (): ExecutorStats[] => tasks.localStats() }),
        }
      : {}),
  });
  if (redis) {
    const described = target ? describeTarget(target) : 'the given client';
    logger.info({ redis: described, prefix }, 'coordinating through Redis at %s', described);
  } else if (local) {
    logger.warn('no Redis (local: this node runs alone): installation jobs run on this node only and nothing is shared; a second replica would run them again');
  }
  const add = (job: JobDefinition | JobDefinitionLike<string>): JobInfo => {
    // Without a shared Redis every replica would run an installation job: refused unless told this node runs alone.
    if (!redis && !local && (job as { scope?: unknown }).scope === 'installation') {
      throw leaseholdError(ErrorCodes.redisRequired, {
        what: `installation job ${JSON.stringify((job as { id?: unknown }).id)} (once per tick for every node that shares the Redis)`,
        alternative: '; on a node that runs alone, say so with local: true (leasehold start --local), or try it with leasehold start --private-redis',
      });
    }
    const view = core.add(withThread(job, tasks));
    metrics.addJob(view.job.id, view.job.scope);
    return jobInfo(view);
  };
  const registrations = new Registrations({
    add,
    remove: (id) => core.remove(id),
    // On a worker executor the task names its module, which the thread loads the method from.
    checkTask: (task) => void tasks.check(task),
    addTask: (task) => void tasks.add(task as TaskDefinition),
    removeTask: (id) => tasks.remove(id),
    call: (id) => (args) => tasks.call(id, args),
    warn: (message) => logger.warn(message),
  });
  let unguard: (() => void) | undefined;
  let stopping: Promise<void> | undefined;
  const runner: Runner = {
    instanceId,
    add,
    register: (instance, options) => registrations.register(instance, options),
    async start() {
      if (unhandled !== 'off') unguard ??= guardProcess({ mode: unhandled, logger, counts: unhandledCounts, graceMs: shutdownGraceMs, stop: () => runner.stop() });
      await node.start();
      tasks.startConsumers();
      core.start();
      logger.info({ instanceId, jobs: core.jobs().length }, 'leasehold runner started');
    },
    stop() {
      stopping ??= (async () => {
        tasks.closeIntake();
        // Runs end and are recorded, and tasks end, before the status is flushed and Redis closed.
        const runsEnded = core.stop();
        await Promise.all([runsEnded, tasks.stop(shutdownGraceMs, runsEnded)]);
        await node.stop();
        detachLog();
        tracing.detach();
        taskTracing.detach();
        unguard?.();
        logger.info({ instanceId }, 'leasehold runner stopped');
      })();
      return stopping;
    },
    on: (event, fn) => core.on(event, fn),
    jobs: () => core.jobs().map(jobInfo),
    runNow: (id) => core.runNow(id),
    remove: (id) => core.remove(id),
    cancel: (id) => core.cancel(id),
    routes: node.routes,
    metrics: metrics.registry,
    status: async () => {
      if (!node.status) throw leaseholdError(ErrorCodes.redisRequired, { what: 'the job status', alternative: '' });
      return node.status.read();
    },
    addTask: (task) => void tasks.add(task as TaskDefinition),
    submit: (task, payload, options) => tasks.submit(task as TaskDefinition | string, payload, options) as Promise<TaskHandle<never>>,
    cancelTask: (taskId) => tasks.cancel(taskId),
    executors: () => tasks.clusterStats(),
  };
  asyncCalls.set(runner, (id) => (args) => tasks.call(id, args));
  return runner;
}

const asyncCalls = new WeakMap<Runner, (id: string) => AsyncCall>();

/**
 * How the calls of an `@Async` method submit to `runner` (for the methods of a jobs module's
 * instances, which `leasehold start` binds): a failure of a call nobody awaits is reported, never
 * an unhandled rejection (`tasks/call.ts`).
 */
export function asyncCallsOf(runner: Runner): (id: string) => AsyncCall {
  const calls = asyncCalls.get(runner);
  if (!calls) throw new LeaseholdError(ErrorCodes.invalidState, 'not a runner made by createRunner');
  return calls;
}
