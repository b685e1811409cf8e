/**
 * The composition root: `createRunner` builds the runner core and wires it to its adapters:
 * the log listener, and with Redis the lease coordinator, the status layer (stats, registry,
 * settings, control), the metrics and the HTTP routes. Nothing below this module knows the
 * others; each takes what it needs as a port and the runner emits events to listeners.
 * `docs/architecture.md` draws the layers.
 * @module
 */
import { hostname } from 'node:os';
import type { FastifyPluginAsync } from 'fastify';
import { ErrorCodes, LeaseholdError } from './errors.js';
import { checkInstanceId, checkPrefix, checkRedisSource } from './config.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import { parseDuration, type Duration } from './schedule/duration.js';
import type { JobDefinition, JobDefinitionLike } from './schedule/job.js';
import { RunnerCore, jobInfo, type JobInfo } from './runner/runner.js';
import type { Listener, RunnerEvents } from './runner/events.js';
import { createRedis, whenReady, type RedisClient } from './redis/connection.js';
import { describeTarget, type RedisTarget } from './redis/target.js';
import { DEFAULT_PREFIX, keys as keyNames } from './redis/keys.js';
import { redisCoordinator, type RedisCoordinator } from './lease/redis-coordinator.js';
import { createStatusLayer, packageVersion, type StatusLayer, type StatusLayerOptions } from './status/index.js';
import type { ClusterStatus } from './status/model.js';
import { createRunnerMetrics, type RunnerMetrics } from './metrics/prom.js';
import { createLogger } from './log/logger.js';
import { attachLogListener } from './log/listener.js';
import { leaseholdRoutes, type ExecutorsSource, type MetricsSource } from './http/plugin.js';
import { localRoutes } from './http/local.js';
import { checkToken } from './http/auth.js';
import { StatusEvents } from './http/events.js';
import { Registrations, type RegisterOptions } from './decorators/register.js';
import { attachTracing } from './trace/tracer.js';
import { attachTaskTracing } from './trace/tasks.js';
import { mcpRoutes } from './mcp/http.js';
import { DEFAULT_EXECUTOR, ExecutorBoard, Tasks, queueExecutor, resolveExecutors, withThread, type ExecutorConfig, type ExecutorStats, type SubmitOptions, type TaskDefinition, type TaskHandle } from './tasks/index.js';

/** Options of {@link createRunner}. */
export interface RunnerOptions {
  /**
   * `redis://` or `rediss://` URL. Give one of `redisUrl`, `redisClusterNodes`,
   * `redisSentinels` (with `redisSentinelName`) and `redis`; without any, installation jobs
   * run on this node alone.
   */
  readonly redisUrl?: string;
  /**
   * Redis Cluster: some of its nodes, `host:port` (the others are discovered). An entry may
   * be a URL, `redis[s]://[user:password@]host:port`, whose user, password and TLS apply to
   * every node.
   */
  readonly redisClusterNodes?: readonly string[];
  /**
   * Redis Sentinel: the Sentinels' addresses, `host:port` (default port 26379); needs
   * `redisSentinelName`. An entry may be a URL whose user, password and TLS apply to the
   * master and its replicas.
   */
  readonly redisSentinels?: readonly string[];
  /** The name of the master the Sentinels watch (`sentinel monitor <name> ...`). */
  readonly redisSentinelName?: string;
  /**
   * An existing ioredis client (a `Redis`, or a `Cluster`) whose address, auth and TLS are
   * reused: it is duplicated for each of the runner's connections, never used or closed itself.
   */
  readonly redis?: RedisClient;
  /** Prefix of every Redis key. Default `leasehold`. */
  readonly prefix?: string;
  /** This node's id. Default `<host>-<pid>`. */
  readonly instanceId?: string;
  /** A pino logger. Default: JSON lines on stdout at `LOG_LEVEL` (info). */
  readonly logger?: Logger;
  /** How long `stop()` waits for runs in progress before aborting them. Default 10s. */
  readonly shutdownGrace?: Duration;
  /** The clock (tests inject one). */
  readonly clock?: Clock;
  /** Bearer token of the admin routes (run, pause, resume). Without one they are refused. */
  readonly adminToken?: string;
  /**
   * Token of the reads: `GET /manage/*` (the status, the status page and its events) then need
   * `Authorization: Bearer <readToken>` or the cookie of the page's sign-in. `/health/*` stays
   * open. Without one reads are open.
   */
  readonly readToken?: string;
  /** Bearer token of `GET /metrics` (Prometheus's `authorization` setting). Without one it is open. */
  readonly metricsToken?: string;
  /** Unsuccessful runs in a row from which a job shows as degraded. Default 3. */
  readonly failingStreak?: number;
  /** How many recent runs each job keeps in Redis (`GET /manage/jobs/:id`), 1 to 1,000. Default 50. */
  readonly recentRuns?: number;
  /**
   * How long after an installation tick its backup node claims it, when the first-ranked node
   * has not (dead, stalled, or not seeing the same live nodes). Default `100ms`.
   */
  readonly handoffDelay?: Duration;
  /**
   * The executors of background tasks, by name: `{ reports: { kind: 'worker', concurrency: 2 } }`.
   * An executor used but not configured is a `loop` with the defaults; the environment
   * (`LEASEHOLD_EXECUTOR_<NAME>_CONCURRENCY`, ...) overrides what is given here.
   */
  readonly executors?: Readonly<Record<string, ExecutorConfig>>;
}

/**
 * A Prometheus registry as a runner exposes it: its text exposition and its content type
 * (it is a prom-client `Registry`, typed by what serving it needs).
 */
export interface MetricsRegistry {
  /** The content type of the text exposition. */
  readonly contentType: string;
  /** The text exposition of every metric. */
  metrics(): Promise<string>;
}

/** A job runner; see {@link createRunner}. */
export interface Runner {
  /** This node's id. */
  readonly instanceId: string;
  /**
   * Adds a job (from `defineJob`, a `satisfies JobDefinition` list, or an object literal).
   * Throws a LeaseholdError naming the job and the field when it is wrong.
   */
  add(job: JobDefinition): JobInfo;
  /**
   * Adds a job declared as a plain object before it is added, whose `scope` TypeScript has
   * widened to `string`; the scope is checked here, as every field is.
   */
  add<S extends string>(job: JobDefinitionLike<S>): JobInfo;
  /**
   * Adds every `@Scheduled` method of an instance as a job named `ClassName.method` (or
   * `<namespace>.ClassName.method` when another registered class has the same name; an
   * explicit `id` wins), run with `this` bound to the instance; and registers every `@Async`
   * method as a task named by the same rule, to which each call of the method is submitted.
   * @throws LeaseholdError naming `Class.method` and the field when one is wrong (`@Async` on a
   * `@Scheduled` method among them); then none is added.
   */
  register(instance: object, options?: RegisterOptions): JobInfo[];
  /** Starts the timer (and connects to Redis when configured). */
  start(): Promise<void>;
  /** Stops: no new run, a grace for runs in progress, then abort; releases everything. */
  stop(): Promise<void>;
  /** Subscribes to lifecycle events (`runStarted`, `runEnded`, `skipped`, ...). */
  on<K extends keyof RunnerEvents>(event: K, fn: Listener<K>): () => void;
  /** The jobs as this node sees them. */
  jobs(): JobInfo[];
  /** Starts a job now, outside its schedule; false when unknown or already running. */
  runNow(jobId: string): boolean;
  /**
   * Removes a job from this node: it fires no more here (a run in progress ends as it would
   * have). Once no live node has it, its status shows `orphaned`. False for an unknown id.
   */
  remove(jobId: string): boolean;
  /**
   * Aborts the job's run in progress on this node with reason `cancelled` (outcome
   * `cancelled`); false when it has none here. `POST /manage/jobs/:id/cancel` does it cluster-wide.
   */
  cancel(jobId: string): boolean;
  /**
   * The HTTP routes (`/manage/jobs`, `/health`, `/metrics`, admin, and the status page
   * `/manage/ui` with its event stream) as a fastify plugin bound to this runner:
   * `app.register(runner.routes)`. Without Redis `/health` and `/metrics`
   * answer, and the status routes say (503) that the status is kept in Redis.
   */
  readonly routes: FastifyPluginAsync;
  /** This runner's Prometheus registry: this node's job metrics and the process metrics. */
  readonly metrics: MetricsRegistry;
  /** The cluster's status, read from Redis (what `GET /manage/jobs` returns). */
  status(): Promise<ClusterStatus>;
  /**
   * Registers a background task on this node: it can be submitted by id, and this node runs it
   * when it comes off its queue executor's queue. Throws a LeaseholdError naming the task and
   * the field when it is wrong.
   */
  addTask<P, R>(task: TaskDefinition<P, R>): void;
  /**
   * Submits a task (its definition, or the id of one registered here) with its payload. Resolves
   * once the task is accepted (queued in memory, or persisted for a queue executor) with a
   * handle whose `result()` is the task's result; rejects with `queueFull`, `shutdown`,
   * `invalidTask` (a bad option, or a payload a worker thread or queue cannot take).
   */
  submit<P, R>(task: TaskDefinition<P, R> | string, payload: P, options?: SubmitOptions): Promise<TaskHandle<R>>;
  /** Cancels a task waiting or running on this node (outcome `cancelled`); false when none has the id. */
  cancelTask(taskId: string): boolean;
  /**
   * The cluster's executors (what `GET /manage/executors` answers): a row per node for loop and
   * worker executors, and a queue executor's counts from its queue. Without Redis, this node's.
   */
  executors(): Promise<ExecutorStats[]>;
}

/** The runner's option names, as its configuration errors show them. */
const REDIS_OPTIONS = { url: 'redisUrl', clusterNodes: 'redisClusterNodes', sentinels: 'redisSentinels', sentinelName: 'redisSentinelName', client: 'redis' } as const;

/** Resolves a runner's options into checked values. */
export function resolveRunnerOptions(opts: RunnerOptions): { instanceId: string; prefix: string; shutdownGraceMs: number; logger: Logger; target: RedisTarget | undefined } {
  checkRedisSource(
    { url: opts.redisUrl, clusterNodes: opts.redisClusterNodes, sentinels: opts.redisSentinels, sentinelName: opts.redisSentinelName, client: opts.redis },
    REDIS_OPTIONS,
  );
  let target: RedisTarget | undefined;
  if (opts.redisUrl !== undefined) target = { url: opts.redisUrl };
  else if (opts.redisClusterNodes !== undefined) target = { clusterNodes: [...opts.redisClusterNodes] };
  else if (opts.redisSentinels !== undefined) target = { sentinels: [...opts.redisSentinels], sentinelName: opts.redisSentinelName ?? '' };
  const instanceId = checkInstanceId(opts.instanceId ?? `${hostname()}-${process.pid}`, 'instanceId');
  const prefix = checkPrefix(opts.prefix ?? DEFAULT_PREFIX, 'prefix');
  const shutdownGraceMs = opts.shutdownGrace === undefined ? 10_000 : parseDuration(opts.shutdownGrace, 'shutdownGrace', true);
  const logger = opts.logger ?? createLogger({ level: process.env['LOG_LEVEL'] ?? 'info' });
  return { instanceId, prefix, shutdownGraceMs, logger, target };
}

/** Options of {@link attachStatus}: the status layer's, and the tokens of the routes. */
export interface AttachStatusOptions extends Omit<StatusLayerOptions, 'onNewJob'> {
  /** The cluster's executors, for `GET /manage/executors`. */
  readonly executors?: ExecutorsSource;
  readonly adminToken?: string;
  readonly readToken?: string;
  readonly metricsToken?: string;
}

/** A runner's Redis-backed adapters, wired to it: see {@link attachStatus}. */
export interface AttachedStatus extends StatusLayer {
  /** The HTTP routes, bound to this runner: `app.register(attached.routes)`. */
  readonly routes: FastifyPluginAsync;
  /** This runner's Prometheus registry (with the process metrics). */
  readonly metrics: MetricsRegistry;
}

/**
 * Wires a runner core (`opts.core`) to the status layer (and the core to its settings), the metrics and the
 * HTTP routes. `start()` before `core.start()`; `stop()` after `core.stop()`.
 */
export function attachStatus(opts: AttachStatusOptions, runnerMetrics?: RunnerMetrics): AttachedStatus {
  const { adminToken, readToken, metricsToken, executors, ...statusOptions } = opts;
  const core = opts.core;
  const metrics = runnerMetrics ?? createRunnerMetrics(core);
  const status = createStatusLayer({
    ...statusOptions,
    onNewJob: (id) => {
      const v = core.job(id);
      if (v) metrics.addJob(id, v.job.scope);
    },
  });
  core.setSettings(status.settings);
  core.setClaimOrder(status.claimOrder);
  metrics.successDeadlines(async () => {
    const cluster = await status.api.cluster().catch(() => undefined);
    return (cluster?.jobs ?? []).map((j) => ({ jobId: j.id, dueBy: j.state === 'paused' || j.state === 'orphaned' || !j.successDueBy ? null : Date.parse(j.successDueBy) }));
  });
  const registry = metrics.registry;
  // The page's event streams end when the runner stops, before Redis is closed under them.
  const events = new StatusEvents({ api: status.api, clock: core.clock, ...(executors ? { executors } : {}), onReadError: (err) => opts.logger.debug({ err }, 'status events: reading the status failed') });
  const routes: FastifyPluginAsync = async (app) => {
    await app.register(leaseholdRoutes, {
      api: status.api,
      instanceId: core.instanceId,
      metrics: metricsSource(registry),
      events,
      ...(executors ? { executors } : {}),
      ...(adminToken ? { adminToken } : {}),
      ...(readToken ? { readToken } : {}),
      ...(metricsToken ? { metricsToken } : {}),
    });
    await app.register(mcpRoutes, { api: status.api, instanceId: core.instanceId, adminToken, readToken, now: () => core.now(), version: packageVersion(), executors });
  };
  return {
    ...status,
    routes,
    metrics: registry,
    async stop() {
      events.close();
      metrics.detach();
      await status.stop();
    },
  };
}

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

/** What `GET /metrics` serves, from a registry. */
function metricsSource(registry: MetricsRegistry): MetricsSource {
  return async () => ({ contentType: registry.contentType, text: await registry.metrics() });
}
