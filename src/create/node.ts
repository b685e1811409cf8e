/**
 * A node: the scheduler built with its ports, and the adapters around it: its coordinator, with
 * Redis its status layer (stats, registry, settings, control), its metrics and its routes.
 * `createRunner` adds the tasks, the logs and the tracing; tests drive a node as it is.
 *
 * The status layer's settings source and claim order are the scheduler's ports, and they reach
 * the scheduler once it runs (to re-read a job's settings, to list the jobs in the heartbeat): they
 * are built first over a late-bound port ({@link lateScheduler}), the scheduler with them, then
 * the rest of the status layer over the scheduler itself.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { completeClock, type Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { SubmitTask } from '../schedule/submit.js';
import { Scheduler } from '../runner/runner.js';
import type { ClaimOrder } from '../runner/order.js';
import type { RunHooks } from '../runner/hooks.js';
import type { Coordinator } from '../lease/port.js';
import { redisCoordinator } from '../lease/redis-coordinator.js';
import { whenReady } from '../redis/connection.js';
import { keys as keyNames } from '../redis/keys.js';
import { checkStatusOptions, createStatusLayer, statusSources, type SourcesScheduler, type StatusLayer } from '../status/index.js';
import type { ExecutorsSource, ManageApi } from '../status/api.js';
import type { ClusterStatus } from '../status/model.js';
import type { UnhandledFigures } from '../metrics/unhandled.js';
import type { StreakChange } from '../status/batch.js';
import { createRunnerMetrics, type ExecutorGauges, type RunnerMetrics, type SuccessDeadline } from '../metrics/prom.js';
import { checkToken } from '../http/auth.js';
import { checkAllowedOrigins } from '../mcp/origin.js';
import type { FastifyPluginAsync } from 'fastify';
import { redisConnections, type Connections, type RedisWhere } from './connections.js';
import { aloneRoutes, statusRoutes, type NodeRoutes } from './status.js';

/** How long a node's start waits for the lease connection before going on without it, ms. */
const LEASE_WAIT_MS = 3_000;

/** Options of {@link createNode}. */
export interface NodeOptions {
  readonly instanceId: string;
  readonly logger: Logger;
  readonly shutdownGraceMs: number;
  readonly clock?: Clock;
  /** Where Redis is; without it the node is alone: no status, and it claims every tick itself. */
  readonly redis?: RedisWhere;
  /** Prefix of every key. Default `leasehold`. */
  readonly prefix?: string;
  /** `'redis'`: installation claims through Redis (a `lease` connection). Default: this node alone. */
  readonly coordinator?: 'redis' | Coordinator;
  /** Who claims installation ticks. Default: with Redis, the ranking over the live nodes; else this node. */
  readonly claimOrder?: ClaimOrder;
  /** What runs around each run (the tracer). */
  readonly hooks?: RunHooks;
  /** How a run submits a background task (`ctx.submit`). */
  readonly submit?: SubmitTask;
  /** The cluster's executors, for `GET /manage/executors`. */
  readonly executors?: ExecutorsSource;
  /** The executors' figures of the metrics, read at each scrape (an empty list when they cannot be read). */
  readonly executorFigures?: () => Promise<readonly ExecutorGauges[]>;
  /** Status-page event streams served at once. Default 100. */
  readonly eventsMaxClients?: number | undefined;
  readonly adminToken?: string | undefined;
  readonly readToken?: string | undefined;
  readonly metricsToken?: string | undefined;
  /** Secret of the read cookie (default: the read token). */
  readonly cookieSecret?: string | undefined;
  /** Browser origins allowed to call `POST /mcp` beside the loopback ones. */
  readonly mcpAllowedOrigins?: readonly string[] | undefined;
  /** Unsuccessful runs in a row from which a job is degraded. Default 3. */
  readonly failingStreak?: number | undefined;
  /** How many recent runs each job keeps in Redis. Default 50. */
  readonly recentRuns?: number | undefined;
  /** How many jobs have series of their own in the metrics (see `RunnerOptions.metricsJobLimit`). */
  readonly metricsJobLimit?: number | undefined;
  /** How long after a tick the backup claimer claims, ms. Default 100. */
  readonly handoffMs?: number | undefined;
  /** leasehold's version, shown in the instance list. Default: this package's. */
  readonly version?: string;
  /** The rejections and exceptions nobody handled that the runner reported, for the metrics. */
  readonly unhandled?: () => UnhandledFigures;
  /** Told when this node's stats write starts or ends an installation job's failing streak. */
  readonly onStreak?: ((change: StreakChange) => void) | undefined;
}

/** A node; see the module comment. `start()` before `core.start()`; `stop()` ends everything. */
export interface Node {
  readonly core: Scheduler;
  readonly metrics: RunnerMetrics;
  /** The node's Redis connections (none without Redis). */
  readonly connections: Connections | undefined;
  /** The HTTP routes (with the MCP tools when Redis is there): `app.register(node.routes)`. */
  readonly routes: FastifyPluginAsync;
  /** The status layer (with Redis). */
  readonly status: StatusLayer | undefined;
  /** Connects the coordinator and starts the status layer; never fails for an absent Redis. */
  start(): Promise<void>;
  /**
   * Stops the scheduler (its runs end and are recorded), then the status layer (stats flushed,
   * heartbeat removed) and the metrics, and closes the connections last.
   */
  stop(): Promise<void>;
}

/** A node with Redis, with its status layer's API and reads at hand. */
export interface StatusNode extends Node {
  readonly status: StatusLayer;
  readonly api: ManageApi;
  /** Writes pending stats now; false if something could not be written. */
  flush(): Promise<boolean>;
  read(): Promise<ClusterStatus>;
}

/**
 * The scheduler as the parts built before it see it: each call reaches the scheduler once it is
 * built, which is before any is made (they come from the status layer's start and later).
 */
function lateScheduler(): { readonly port: SourcesScheduler; bind(scheduler: Scheduler): void } {
  let bound: Scheduler | undefined;
  const scheduler = (): Scheduler => {
    if (!bound) throw new LeaseholdError(ErrorCodes.invalidState, 'the scheduler was asked before it was built');
    return bound;
  };
  return {
    port: { refresh: (id) => scheduler().refresh(id), now: () => scheduler().now(), jobs: () => scheduler().jobs() },
    bind: (s) => void (bound = s),
  };
}

/** The jobs' success deadlines from the cluster's status, for the metrics; none when it cannot be read. */
async function successDeadlines(api: ManageApi, logger: Logger): Promise<SuccessDeadline[]> {
  let cluster: ClusterStatus;
  try {
    cluster = await api.cluster();
  } catch (err) {
    logger.debug({ error: errorMessage(err) }, 'the success deadlines are left out of this scrape: reading the status failed');
    return [];
  }
  return cluster.jobs.map((j) => ({ jobId: j.id, dueBy: j.state === 'paused' || j.state === 'orphaned' || !j.successDueBy ? null : Date.parse(j.successDueBy) }));
}

/** Builds a node; see the module comment. */
export function createNode(opts: NodeOptions & { readonly redis: RedisWhere }): StatusNode;
export function createNode(opts: NodeOptions): Node;
export function createNode(opts: NodeOptions): Node {
  const { instanceId, logger } = opts;
  const clock = completeClock(opts.clock);
  const readToken = checkToken(opts.readToken, 'readToken');
  const metricsToken = checkToken(opts.metricsToken, 'metricsToken');
  const adminToken = checkToken(opts.adminToken, 'adminToken');
  const cookieSecret = checkToken(opts.cookieSecret, 'cookieSecret');
  const mcpAllowedOrigins = checkAllowedOrigins(opts.mcpAllowedOrigins, 'mcpAllowedOrigins');
  if (opts.redis) checkStatusOptions(opts);
  if (opts.coordinator === 'redis' && !opts.redis) throw new LeaseholdError(ErrorCodes.invalidConfig, 'claims through Redis need Redis');
  const connections = opts.redis ? redisConnections(opts.redis, logger) : undefined;
  const keys = keyNames(opts.prefix);
  const lease = opts.coordinator === 'redis' ? connections?.open('lease') : undefined;
  const redisClaims = lease ? redisCoordinator({ redis: lease, keys, instanceId, logger, ownsConnection: false, clock, recentRuns: opts.recentRuns }) : undefined;
  const coordinator = redisClaims ?? (opts.coordinator === 'redis' ? undefined : opts.coordinator);
  const statusRedis = connections?.open('status');
  const later = lateScheduler();
  const sources = statusRedis ? statusSources({ redis: statusRedis, keys, logger, clock, instanceId, scheduler: later.port, version: opts.version, handoffMs: opts.handoffMs }) : undefined;
  const core = new Scheduler({
    instanceId,
    logger,
    shutdownGraceMs: opts.shutdownGraceMs,
    clock,
    coordinator,
    settings: sources?.settings,
    claimOrder: opts.claimOrder ?? sources?.claimOrder,
    hooks: opts.hooks,
    submit: opts.submit,
  });
  later.bind(core);
  const metrics = createRunnerMetrics(core, {
    jobLimit: opts.metricsJobLimit,
    // Read at a scrape, once the status layer below exists.
    successDeadlines: opts.redis ? () => (status ? successDeadlines(status.api, logger) : Promise.resolve([])) : undefined,
    executorFigures: opts.executorFigures,
    // Read at a scrape, once the routes below exist.
    eventStreams: () => routes.figures(),
    unhandled: opts.unhandled,
    authFailures: () => routes.authFailures(),
    statsBatchesDropped: () => status?.droppedBatches() ?? new Map<string, number>(),
  });
  const status =
    connections && statusRedis && sources
      ? createStatusLayer({
          sources,
          scheduler: core,
          redis: statusRedis,
          sub: connections.open('control'),
          keys,
          logger,
          failingStreak: opts.failingStreak,
          recentRuns: opts.recentRuns,
          onStreak: opts.onStreak,
          onNewJob: (id) => {
            const v = core.job(id);
            if (v) metrics.addJob(id, v.job.scope);
          },
        })
      : undefined;
  const routeOptions = { instanceId, metrics: metrics.registry, executors: opts.executors, adminToken, readToken, metricsToken, cookieSecret, mcpAllowedOrigins, logger };
  const routes: NodeRoutes = status ? statusRoutes({ ...routeOptions, api: status.api, clock, now: () => core.now(), maxClients: opts.eventsMaxClients }) : aloneRoutes(routeOptions);
  const node: Node = {
    core,
    metrics,
    connections,
    routes: routes.routes,
    status,
    async start() {
      if (redisClaims && lease) {
        // Do not block long on an absent Redis: claims fail (as failed runs) until it is back.
        await whenReady(lease, LEASE_WAIT_MS).catch((err: unknown) => logger.warn({ err }, 'Redis is not reachable yet; retrying in the background'));
        await redisClaims.start();
      }
      await status?.start();
    },
    async stop() {
      await core.stop();
      routes.close();
      await status?.stop();
      metrics.detach();
      await connections?.close();
    },
  };
  if (!status) return node;
  const withStatus: StatusNode = { ...node, status, api: status.api, flush: () => status.flush(), read: () => status.read() };
  return withStatus;
}
