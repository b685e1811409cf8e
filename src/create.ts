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
import { LeaseholdError } from './errors.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import { parseDuration, type Duration } from './schedule/duration.js';
import type { JobDefinition } from './schedule/job.js';
import { RunnerCore, jobInfo, type JobInfo } from './runner/runner.js';
import type { Listener, RunnerEvents } from './runner/events.js';
import { createRedis, describeTarget, whenReady, type RedisClient, type RedisTarget } from './redis/connection.js';
import { keys as keyNames } from './redis/keys.js';
import { redisCoordinator, type RedisCoordinator } from './lease/redis-coordinator.js';
import { createStatusLayer, type StatusLayer, type StatusLayerOptions } from './status/index.js';
import type { ClusterStatus } from './status/model.js';
import { createRunnerMetrics } from './metrics/prom.js';
import { createLogger } from './log/logger.js';
import { attachLogListener } from './log/listener.js';
import { leaseholdRoutes } from './http/plugin.js';
import { localRoutes } from './http/local.js';

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
  /** Unsuccessful runs in a row from which a job shows as degraded. Default 3. */
  readonly failingStreak?: number;
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
  /** Adds a job; throws a LeaseholdError naming the job and the field when it is wrong. */
  add(job: JobDefinition): JobInfo;
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
   * The HTTP routes (`/manage/jobs`, `/health`, `/metrics`, admin) as a fastify plugin bound
   * to this runner: `app.register(runner.routes)`. Without Redis only `/health` answers;
   * the status routes say that the status needs Redis.
   */
  readonly routes: FastifyPluginAsync;
  /** This runner's Prometheus registry (job metrics and process metrics); undefined without Redis. */
  readonly metrics: MetricsRegistry | undefined;
  /** The cluster's status, read from Redis (what `GET /manage/jobs` returns). */
  status(): Promise<ClusterStatus>;
}

const INSTANCE_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** Resolves a runner's options into checked values. */
export function resolveRunnerOptions(opts: RunnerOptions): { instanceId: string; prefix: string; shutdownGraceMs: number; logger: Logger; target: RedisTarget | undefined } {
  const given = (['redisUrl', 'redisClusterNodes', 'redisSentinels', 'redis'] as const).filter((k) => opts[k] !== undefined);
  if (given.length > 1) {
    throw new LeaseholdError('INVALID_CONFIG', `give only one of redisUrl, redisClusterNodes, redisSentinels and redis, not ${given.join(' and ')}`);
  }
  if ((opts.redisSentinels === undefined) !== (opts.redisSentinelName === undefined)) {
    throw new LeaseholdError('INVALID_CONFIG', 'redisSentinels and redisSentinelName go together');
  }
  let target: RedisTarget | undefined;
  if (opts.redisUrl !== undefined) target = { url: opts.redisUrl };
  else if (opts.redisClusterNodes !== undefined) target = { clusterNodes: [...opts.redisClusterNodes] };
  else if (opts.redisSentinels !== undefined) target = { sentinels: [...opts.redisSentinels], sentinelName: opts.redisSentinelName ?? '' };
  const instanceId = opts.instanceId ?? `${hostname()}-${process.pid}`;
  if (!INSTANCE_ID.test(instanceId)) {
    throw new LeaseholdError('INVALID_CONFIG', `instanceId: ${JSON.stringify(instanceId)} must be 1 to 128 letters, digits or . _ : @ -`);
  }
  const prefix = opts.prefix ?? 'leasehold';
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(prefix)) {
    throw new LeaseholdError('INVALID_CONFIG', `prefix: ${JSON.stringify(prefix)} must be 1 to 64 letters, digits or . _ : -`);
  }
  const shutdownGraceMs = opts.shutdownGrace === undefined ? 10_000 : parseDuration(opts.shutdownGrace, 'shutdownGrace', true);
  const logger = opts.logger ?? createLogger({ level: process.env['LOG_LEVEL'] ?? 'info' });
  return { instanceId, prefix, shutdownGraceMs, logger, target };
}

/** Options of {@link attachStatus}: the status layer's, and the admin token of the routes. */
export interface AttachStatusOptions extends Omit<StatusLayerOptions, 'onNewJob'> {
  readonly adminToken?: string;
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
export function attachStatus(opts: AttachStatusOptions): AttachedStatus {
  const { adminToken, ...statusOptions } = opts;
  const core = opts.core;
  const metrics = createRunnerMetrics(core);
  const status = createStatusLayer({
    ...statusOptions,
    onNewJob: (id) => {
      const v = core.job(id);
      if (v) metrics.addJob(id, v.job.scope);
    },
  });
  core.setSettings(status.settings);
  const registry = metrics.registry;
  const routes: FastifyPluginAsync = async (app) => {
    await app.register(leaseholdRoutes, {
      api: status.api,
      /** The text exposition of every metric. */
      metrics: async () => ({ contentType: registry.contentType, text: await registry.metrics() }),
      ...(adminToken ? { adminToken } : {}),
    });
  };
  return {
    ...status,
    routes,
    /** The text exposition of every metric. */
    metrics: registry,
    async stop() {
      metrics.detach();
      await status.stop();
    },
  };
}

/**
 * Creates a runner. Add jobs, then `await runner.start()`; `await runner.stop()` on shutdown.
 * @throws LeaseholdError `INVALID_CONFIG` for a bad option.
 */
export function createRunner(opts: RunnerOptions = {}): Runner {
  const { instanceId, shutdownGraceMs, logger, prefix, target } = resolveRunnerOptions(opts);
  const core = new RunnerCore({ instanceId, logger, shutdownGraceMs, ...(opts.clock ? { clock: opts.clock } : {}) });
  const detachLog = attachLogListener(core, logger);
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
    status = attachStatus({
      core,
      redis: where,
      prefix,
      logger,
      ...(opts.adminToken ? { adminToken: opts.adminToken } : {}),
      ...(opts.failingStreak !== undefined ? { failingStreak: opts.failingStreak } : {}),
    });
    const described = target ? describeTarget(target) : 'the given client';
    logger.info({ redis: described, prefix }, 'coordinating through Redis at %s', described);
  } else {
    logger.warn('no Redis configured: installation jobs run on this node alone and nothing is shared');
  }
  return {
    instanceId,
    add: (job) => jobInfo(core.add(job)),
    async start() {
      if (coordinator && leaseConnection) {
        // Do not block long on an absent Redis: claims fail (as failed runs) until it is back.
        await whenReady(leaseConnection, 3_000).catch((err: unknown) => logger.warn({ err }, 'Redis is not reachable yet; retrying in the background'));
        await coordinator.start();
      }
      await status?.start();
      core.start();
      logger.info({ instanceId, jobs: core.jobs().length }, 'leasehold runner started');
    },
    async stop() {
      await core.stop();
      await status?.stop();
      detachLog();
      logger.info({ instanceId }, 'leasehold runner stopped');
    },
    on: (event, fn) => core.on(event, fn),
    jobs: () => core.jobs().map(jobInfo),
    runNow: (id) => core.runNow(id),
    routes: status ? status.routes : localRoutes,
    /** The text exposition of every metric. */
    metrics: status?.metrics,
    status: async () => {
      if (!status) throw new LeaseholdError('INVALID_STATE', 'the job status is kept in Redis: configure redisUrl, redisClusterNodes, redisSentinels or redis');
      return status.read();
    },
  };
}
