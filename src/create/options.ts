/**
 * What `createRunner` takes and gives: its options, the runner it returns, and the checks that
 * turn the options into values.
 * @module
 */
import { hostname } from 'node:os';
import type { FastifyPluginAsync } from 'fastify';
import { checkInstanceId, checkPrefix, checkRedisSource } from '../config.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { parseDuration, type Duration } from '../schedule/duration.js';
import type { JobDefinition, JobDefinitionLike } from '../schedule/job.js';
import { type JobInfo } from '../runner/runner.js';
import type { Listener, RunnerEvents } from '../runner/events.js';
import { type RedisClient } from '../redis/connection.js';
import { type RedisTarget } from '../redis/target.js';
import { DEFAULT_PREFIX } from '../redis/keys.js';
import type { ClusterStatus } from '../status/model.js';
import { createLogger } from '../log/logger.js';
import { type RegisterOptions } from '../decorators/register.js';
import { type ExecutorConfig, type ExecutorStats, type SubmitOptions, type TaskDefinition, type TaskHandle } from '../tasks/index.js';

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
