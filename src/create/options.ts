/**
 * What `createRunner` takes and gives: its options, the runner it returns, and the checks that
 * turn the options into values.
 * @module
 */
import { hostname } from 'node:os';
import type { FastifyPluginAsync } from 'fastify';
import { checkInstanceId, checkPrefix, checkRedisSource } from '../config.js';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { describe, readDuration, type Duration } from '../schedule/duration.js';
import type { JobDefinition, JobDefinitionLike } from '../schedule/job.js';
import { type JobInfo } from '../runner/runner.js';
import type { Listener, RunnerEvents } from '../runner/events.js';
import { checkRedisTarget, type RedisClient } from '../redis/connection.js';
import { type RedisTarget } from '../redis/target.js';
import { DEFAULT_PREFIX } from '../redis/keys.js';
import type { ClusterStatus } from '../status/model.js';
import { createLogger } from '../log/logger.js';
import { type RegisterOptions } from '../decorators/register.js';
import { UnhandledModes, type UnhandledMode } from './unhandled.js';
import { type ExecutorConfig, type ExecutorStats, type SubmitOptions, type TaskDefinition, type TaskHandle } from '../tasks/index.js';

/** Options of {@link createRunner}. */
export interface RunnerOptions {
  /**
   * `redis://` or `rediss://` URL. Give one of `redisUrl`, `redisClusterNodes`,
   * `redisSentinels` (with `redisSentinelName`) and `redis`; without any, the runner refuses
   * installation jobs unless `local` says it runs alone.
   */
  readonly redisUrl?: string;
  /**
   * True: this runner is the only node, and runs without Redis. Its installation jobs run on it
   * alone and nothing is shared; without Redis and without `local`, adding an installation job
   * throws `redisRequired` (every replica would run it). Not with a Redis option. Default false.
   */
  readonly local?: boolean;
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
  /**
   * Bearer token of the admin routes (run, pause, resume, cancel, `DELETE /manage/jobs/:id`) and
   * of the MCP tools that change jobs; at least 16 characters. Without one they are refused.
   */
  readonly adminToken?: string;
  /**
   * Token of the reads: `GET /manage/*` (the status, the status page and its events) then need
   * `Authorization: Bearer <readToken>` or the cookie of the page's sign-in. `/health/*` stays
   * open. Without one reads are open.
   */
  readonly readToken?: string;
  /** Bearer token of `GET /metrics` (Prometheus's `authorization` setting). Without one it is open. */
  readonly metricsToken?: string;
  /**
   * Secret the status page's sign-in cookie is signed with (at least 16 characters); without one
   * the read token signs it. The cookie expires after 12 hours; changing the secret signs every
   * browser out without changing the read token.
   */
  readonly cookieSecret?: string;
  /**
   * Browser origins (`https://tools.example.com`) allowed to call `POST /mcp` beside the
   * loopback ones; a request with any other `Origin` header is refused (403), against DNS
   * rebinding. A request without `Origin` (an agent, curl) is not concerned.
   */
  readonly mcpAllowedOrigins?: readonly string[];
  /**
   * How many status-page event streams (`GET /manage/events`) this node serves at once; a
   * client beyond them is answered 503. Whatever the cap, a client that does not read is
   * disconnected. Default 100.
   */
  readonly eventsMaxClients?: number;
  /** Unsuccessful runs in a row from which a job shows as degraded. Default 3. */
  readonly failingStreak?: number;
  /** How many recent runs each job keeps in Redis (`GET /manage/jobs/:id`), 1 to 1,000. Default 50. */
  readonly recentRuns?: number;
  /**
   * How many jobs have series of their own (`job="<id>"`) in this node's metrics, 0 to
   * 1,000,000: the first the node registers. The runs of the others are counted in one set of
   * series, `job="(other)"`, so that a scrape stays small however many jobs the node ran.
   * Default 1,000.
   */
  readonly metricsJobLimit?: number;
  /**
   * How long after an installation tick its backup node claims it, when the first-ranked node
   * has not (dead, stalled, or not seeing the same live nodes). Once that node has let a tick
   * pass, its backup claims its next ticks on the tick, reading first, until it finds one
   * claimed. Default `100ms`.
   */
  readonly handoffDelay?: Duration;
  /**
   * The executors of background tasks, by name: `{ reports: { kind: 'worker', concurrency: 2 } }`.
   * A task naming an executor not configured here is refused (`unknownExecutor`), except on
   * `default`, the executor of tasks that name none (a `loop` unless configured). An entry
   * `'*'` configures every other name: `{ '*': {} }` makes any name a `loop` with the defaults.
   * The environment (`LEASEHOLD_EXECUTOR_<NAME>_KIND`, ...) overrides what is given here.
   */
  readonly executors?: Readonly<Record<string, ExecutorConfig>>;
  /**
   * What the process does, while this runner runs, with a rejection nobody handles and an
   * exception nobody catches (in job or task code, or anywhere else in the process):
   *
   * - `'log'`: a rejection is logged (error, naming the job or task whose code made it) and
   *   counted in `leasehold_unhandled_errors_total{kind="rejection"}`, and the process keeps
   *   running; exceptions are left to Node (or to the application's own listener);
   * - `'shutdown'`: as `'log'`, and an exception is logged and counted (`kind="exception"`), then
   *   the runner stops as on `stop()` (runs recorded, leases released, stats flushed) and the
   *   process exits with status 1;
   * - `'off'`: nothing is installed; Node's defaults (or the application's listeners) apply.
   *
   * The listeners are installed by `start()` and removed by `stop()`. `leasehold start` runs
   * with `'shutdown'`. Default `'off'`: the process's policy stays the application's that embeds
   * the runner, since a listener for these events changes what happens to every rejection of
   * the process, the application's own included.
   */
  readonly unhandled?: UnhandledMode;
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

/**
 * A job runner; see {@link createRunner}. Its members, by group:
 *
 * - **lifecycle**: `instanceId`, `start`, `stop`, and `on` for the lifecycle events;
 * - **jobs** on this node: `add`, `register` (`@Scheduled` and `@Async` methods), `jobs`,
 *   `runNow`, `remove`, `cancel`;
 * - **background tasks**: `addTask`, `submit`, `cancelTask`, and the cluster's `executors`;
 * - **the cluster's status**: `status` (read from Redis);
 * - **serving it**: `routes` (the fastify plugin of the status, health, admin and MCP routes)
 *   and `metrics` (the Prometheus registry).
 */
export interface Runner {
  // Lifecycle
  /** This node's id. */
  readonly instanceId: string;
  /** Starts the timer (and connects to Redis when configured). */
  start(): Promise<void>;
  /** Stops: no new run, a grace for runs in progress, then abort; releases everything. */
  stop(): Promise<void>;
  /** Subscribes to lifecycle events (`runStarted`, `runEnded`, `skipped`, ...). */
  on<K extends keyof RunnerEvents>(event: K, fn: Listener<K>): () => void;

  // Jobs on this node
  /**
   * Adds a job (from `defineJob`, a `satisfies JobDefinition` list, or an object literal).
   * Throws a LeaseholdError naming the job and the field when it is wrong.
   */
  add(job: JobDefinition): JobInfo;
  /**
   * Adds a job declared as a plain object before it is added, whose `scope` or durations
   * TypeScript has widened to `string`; they are checked here, as every field is.
   */
  add<S extends string, D extends string>(job: JobDefinitionLike<S, D>): JobInfo;
  /**
   * Adds every `@Scheduled` method of an instance as a job named `ClassName.method` (or
   * `<namespace>.ClassName.method` when another registered class has the same name; an
   * explicit `id` wins), run with `this` bound to the instance; and registers every `@Async`
   * method as a task named by the same rule, to which each call of the method is submitted.
   * @throws LeaseholdError naming `Class.method` and the field when one is wrong (`@Async` on a
   * `@Scheduled` method among them); then none is added.
   */
  register(instance: object, options?: RegisterOptions): JobInfo[];
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

  // Background tasks
  /**
   * Registers a background task on this node: it can be submitted by id, and this node runs it
   * when it comes off its queue executor's queue. Throws a LeaseholdError naming the task and
   * the field when it is wrong. Takes a task of any payload and result types, so that a list of
   * tasks of different types registers in one loop.
   */
  addTask(task: TaskDefinition<never, unknown>): void;
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
   * The cluster's executors, an array of rows (the `executors` array of what `GET /manage/executors`
   * answers, `{executors: [...]}`): a row per node for loop and worker executors, and a queue
   * executor's counts from its queue. Without Redis, this node's.
   */
  executors(): Promise<ExecutorStats[]>;

  // The cluster's status
  /** The cluster's status, read from Redis (what `GET /manage/jobs` returns). */
  status(): Promise<ClusterStatus>;

  // Serving the status and the metrics
  /**
   * The HTTP routes (`/manage/jobs`, `/health`, `/metrics`, admin, and the status page
   * `/manage/ui` with its event stream) as a fastify plugin bound to this runner:
   * `app.register(runner.routes)`. Without Redis `/health` and `/metrics`
   * answer, and the status routes say (503) that the status is kept in Redis.
   */
  readonly routes: FastifyPluginAsync;
  /** This runner's Prometheus registry: this node's job metrics and the process metrics. */
  readonly metrics: MetricsRegistry;
}

/** The runner's option names, as its configuration errors show them. */
const REDIS_OPTIONS = { url: 'redisUrl', clusterNodes: 'redisClusterNodes', sentinels: 'redisSentinels', sentinelName: 'redisSentinelName', client: 'redis' } as const;

/** What the runner calls on its logger. */
const LOGGER_METHODS = ['error', 'warn', 'info', 'debug', 'child', 'isLevelEnabled'] as const;

/** `logger` when it has every method the runner calls, else an error naming what it lacks (not at the first line logged). */
function checkLogger(logger: unknown): Logger {
  const refused = (got: string): LeaseholdError => new LeaseholdError(ErrorCodes.invalidConfig, `logger must be a pino logger (error, warn, info, debug, child and isLevelEnabled), got ${got}; a logger at level "silent" writes nothing`);
  if (typeof logger !== 'object' || logger === null) throw refused(describe(logger));
  const lacks = LOGGER_METHODS.filter((m) => typeof (logger as Record<string, unknown>)[m] !== 'function');
  if (lacks.length > 0) throw refused(`an object without ${lacks.join(', ')}`);
  return logger as Logger;
}

/** Resolves a runner's options into checked values. */
export function resolveRunnerOptions(opts: RunnerOptions): { instanceId: string; prefix: string; shutdownGraceMs: number; logger: Logger; target: RedisTarget | undefined; unhandled: UnhandledMode; local: boolean } {
  checkRedisSource(
    { url: opts.redisUrl, clusterNodes: opts.redisClusterNodes, sentinels: opts.redisSentinels, sentinelName: opts.redisSentinelName, client: opts.redis },
    REDIS_OPTIONS,
  );
  if (opts.local !== undefined && typeof opts.local !== 'boolean') throw new LeaseholdError(ErrorCodes.invalidConfig, `local must be true or false, got ${JSON.stringify(opts.local)}`);
  const local = opts.local === true;
  const withRedis = [opts.redisUrl, opts.redisClusterNodes, opts.redisSentinels, opts.redis].some((v) => v !== undefined);
  if (local && withRedis) throw new LeaseholdError(ErrorCodes.invalidConfig, 'local: true says this runner runs alone, without Redis; leave it out when Redis is configured');
  let target: RedisTarget | undefined;
  if (opts.redisUrl !== undefined) target = { url: opts.redisUrl };
  else if (opts.redisClusterNodes !== undefined) target = { clusterNodes: [...opts.redisClusterNodes] };
  else if (opts.redisSentinels !== undefined) target = { sentinels: [...opts.redisSentinels], sentinelName: opts.redisSentinelName ?? '' };
  if (target !== undefined) checkRedisTarget(target);
  const instanceId = checkInstanceId(opts.instanceId ?? `${hostname()}-${process.pid}`, 'instanceId');
  const prefix = checkPrefix(opts.prefix ?? DEFAULT_PREFIX, 'prefix');
  const shutdownGraceMs = opts.shutdownGrace === undefined ? 10_000 : readDuration(opts.shutdownGrace, 'shutdownGrace', true);
  const logger = opts.logger === undefined ? createLogger({ level: process.env['LOG_LEVEL'] ?? 'info' }) : checkLogger(opts.logger);
  const unhandled = opts.unhandled ?? UnhandledModes.off;
  if (!Object.values(UnhandledModes).includes(unhandled)) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `unhandled must be one of ${Object.values(UnhandledModes).map((m) => `"${m}"`).join(', ')}, got ${describe(unhandled)}`);
  }
  return { instanceId, prefix, shutdownGraceMs, logger, target, unhandled, local };
}
