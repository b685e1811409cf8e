/**
 * The composition root: `createRunner` builds the runner core and wires it to its adapters:
 * the log listener, and with Redis the lease coordinator, the status layer (stats, registry,
 * settings, control), the metrics and the HTTP routes. Nothing below this module knows the
 * others; each takes what it needs as a port and the runner emits events to listeners.
 * `docs/architecture.md` draws the layers.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { parseDuration } from '../schedule/duration.js';
import type { JobDefinition, JobDefinitionLike } from '../schedule/job.js';
import { RunnerCore, jobInfo, type JobInfo } from '../runner/runner.js';
import { createRedis, whenReady, type RedisClient } from '../redis/connection.js';
import { describeTarget } from '../redis/target.js';
import { keys as keyNames } from '../redis/keys.js';
import { redisCoordinator, type RedisCoordinator } from '../lease/redis-coordinator.js';
import { createRunnerMetrics } from '../metrics/prom.js';
import { attachLogListener } from '../log/listener.js';
import { localRoutes } from '../http/local.js';
import { checkToken } from '../http/auth.js';
import { Registrations } from '../decorators/register.js';
import { attachTracing } from '../trace/tracer.js';
import { attachTaskTracing } from '../trace/tasks.js';
import { DEFAULT_EXECUTOR, ExecutorBoard, Tasks, queueExecutor, resolveExecutors, withThread, type ExecutorStats, type TaskDefinition, type TaskHandle } from '../tasks/index.js';
import { resolveRunnerOptions, type Runner, type RunnerOptions } from './options.js';
import { attachStatus, metricsSource, type AttachedStatus } from './status.js';

export { resolveRunnerOptions, type MetricsRegistry, type Runner, type RunnerOptions } from './options.js';
export { attachStatus, type AttachStatusOptions, type AttachedStatus } from './status.js';

/**
 * Creates a runner. Add jobs, then `await runner.start()`; `await runner.stop()` on shutdown.
 * @throws LeaseholdError `invalidConfig` for a bad option.
 */
export function createRunner(opts: RunnerOptions = {}): Runner {
  const { instanceId, shutdownGraceMs, logger, prefix, target } = resolveRunnerOptions(opts);
  const readToken = checkToken(opts.readToken, 'readToken');
  const metricsToken = checkToken(opts.metricsToken, 'metricsToken');
  const core = new RunnerCore({ instanceId, logger, shutdownGraceMs, ...(opts.clock ? { clock: opts.clock } : {}) });
  const tracing = attachTracing(core);
  const taskTracing = attachTaskTracing(core);
  const executorConfigs = resolveExecutors(opts.executors);
  const detachLog = attachLogListener(core, logger, { runFields: tracing.logFields });
  const metrics = createRunnerMetrics(core);
  const redisWhere = opts.redis ? { client: opts.redis } : target ? { target } : undefined;
  const tasks: Tasks = new Tasks({
    instanceId,
    clock: core.clock,
    logger,
    emitter: core.emitter,
    hooks: taskTracing.hooks,
    executors: executorConfigs,
    prefix,
    ...(redisWhere
      ? {
          queue: queueExecutor(redisWhere, prefix),
          board: new ExecutorBoard({ where: redisWhere, key: keyNames(prefix).executors, instanceId, clock: core.clock, logger, rows: (): ExecutorStats[] => tasks.localStats() }),
        }
      : {}),
  });
  core.submit = (task, payload, options) => tasks.submit(task as unknown as TaskDefinition | string, payload, options) as Promise<TaskHandle<never>>;
  let coordinator: RedisCoordinator | undefined;
  let leaseConnection: RedisClient | undefined;
  let status: AttachedStatus | undefined;
  if (target !== undefined || opts.redis !== undefined) {
    const where = opts.redis ? { client: opts.redis } : { target };
    const lease = createRedis({ role: 'lease', ...where });
    leaseConnection = lease;
    lease.on('error', (err: Error) => logger.debug({ err: { message: err.message } }, 'lease connection error'));
    coordinator = redisCoordinator({ redis: lease, keys: keyNames(prefix), instanceId, logger, ownsConnection: true, clock: core.clock });
    core.setCoordinator(coordinator);
    status = attachStatus(
      {
      core,
      redis: where,
      prefix,
      logger,
      ...(opts.adminToken ? { adminToken: opts.adminToken } : {}),
      ...(readToken ? { readToken } : {}),
      ...(metricsToken ? { metricsToken } : {}),
      ...(opts.failingStreak !== undefined ? { failingStreak: opts.failingStreak } : {}),
      ...(opts.recentRuns !== undefined ? { recentRuns: opts.recentRuns } : {}),
      ...(opts.handoffDelay !== undefined ? { handoffMs: parseDuration(opts.handoffDelay, 'handoffDelay', true) } : {}),
      executors: () => tasks.clusterStats(),
      },
      metrics,
    );
    const described = target ? describeTarget(target) : 'the given client';
    logger.info({ redis: described, prefix }, 'coordinating through Redis at %s', described);
  } else {
    logger.warn('no Redis configured: installation jobs run on this node alone and nothing is shared');
  }
  metrics.executorFigures(async () => (await tasks.stats()).map((e) => ({ executor: e.name, queued: e.queued, active: e.active })));
  const add = (job: JobDefinition | JobDefinitionLike<string>): JobInfo => {
    const view = core.add(withThread(job, tasks));
    metrics.addJob(view.job.id, view.job.scope);
    return jobInfo(view);
  };
  const registrations = new Registrations({
    add,
    remove: (id) => core.remove(id),
    checkTask: (task) => {
      const executor = tasks.config(task.executor ?? DEFAULT_EXECUTOR);
      if (executor.kind === 'worker') {
        throw new LeaseholdError(ErrorCodes.invalidTask, `executor "${executor.name}" runs tasks in worker threads, which load a task from its module; an @Async method runs on its registered instance: put it on a loop or queue executor, or make it a task of its own (defineTask with module)`);
      }
      tasks.check(task);
    },
    addTask: (task) => void tasks.add(task as TaskDefinition),
    removeTask: (id) => tasks.remove(id),
    call: (id) => async (args) => (await tasks.submit(id, args)).result(),
  });
  return {
    instanceId,
    add,
    register: (instance, options) => registrations.register(instance, options),
    async start() {
      if (coordinator && leaseConnection) {
        // Do not block long on an absent Redis: claims fail (as failed runs) until it is back.
        await whenReady(leaseConnection, 3_000).catch((err: unknown) => logger.warn({ err }, 'Redis is not reachable yet; retrying in the background'));
        await coordinator.start();
      }
      await status?.start();
      tasks.startConsumers();
      core.start();
      logger.info({ instanceId, jobs: core.jobs().length }, 'leasehold runner started');
    },
    async stop() {
      tasks.closeIntake();
      await Promise.all([core.stop(), tasks.stop(shutdownGraceMs)]);
      await status?.stop();
      metrics.detach();
      detachLog();
      tracing.detach();
      taskTracing.detach();
      logger.info({ instanceId }, 'leasehold runner stopped');
    },
    on: (event, fn) => core.on(event, fn),
    jobs: () => core.jobs().map(jobInfo),
    runNow: (id) => core.runNow(id),
    remove: (id) => core.remove(id),
    cancel: (id) => core.cancel(id),
    routes: status
      ? status.routes
      : async (app) => app.register(localRoutes, { instanceId, metrics: metricsSource(metrics.registry), executors: () => tasks.clusterStats(), ...(readToken ? { readToken } : {}), ...(metricsToken ? { metricsToken } : {}) }),
    metrics: metrics.registry,
    status: async () => {
      if (!status) throw new LeaseholdError(ErrorCodes.invalidState, 'the job status is kept in Redis: configure redisUrl, redisClusterNodes, redisSentinels or redis');
      return status.read();
    },
    addTask: (task) => void tasks.add(task as TaskDefinition),
    submit: (task, payload, options) => tasks.submit(task as TaskDefinition | string, payload, options) as Promise<TaskHandle<never>>,
    cancelTask: (taskId) => tasks.cancel(taskId),
    executors: () => tasks.clusterStats(),
  };
}
