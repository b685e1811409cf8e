/**
 * What the `leasehold` command takes from the layers below, in one place: the cluster's status
 * from a process that is no node, assembled here beside a node's (`leasehold status` and
 * `leasehold forget` read and act over one `command` connection; `leasehold mcp` serves the
 * status layer's API, `status/remote.ts`, over it and a `control` connection), and the names,
 * defaults and types its configuration and output show.
 * @module
 */
import { systemClock, type Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { whenReady } from '../redis/connection.js';
import { describeTarget, type RedisTarget } from '../redis/target.js';
import { keys as keyNames } from '../redis/keys.js';
import { readCluster } from '../status/read.js';
import { forgetJob, type ForgetResult } from '../status/forget.js';
import { remoteManageApi } from '../status/remote.js';
import type { ManageApi } from '../status/api.js';
import type { ClusterStatus } from '../status/model.js';
import { mergeQueues, readBoard, type ExecutorStats } from '../tasks/index.js';
import { redisConnections } from './connections.js';

export { DEFAULT_PREFIX } from '../redis/keys.js';
export { redactUrl, splitList, type RedisTarget } from '../redis/target.js';
export { EXECUTOR_ENV_DOCS, checkTaskDefinitions, resolveExecutors, type ExecutorStats, type TaskDefinition } from '../tasks/index.js';
export { packageVersion } from '../status/index.js';
export type { ClusterStatus, JobStatus } from '../status/model.js';
export { DEFAULT_PAGE_SIZE, MAX_UNPAGED_JOBS, asksForPage, pageOf, parseJobsQuery, type JobsPage, type JobsQuery } from '../status/page.js';
export { forgetRefusal, type ForgetResult } from '../status/forget.js';
export type { ManageApi } from '../status/api.js';

/** Options of {@link openRemote}. */
export interface RemoteOptions {
  readonly target: RedisTarget;
  /** The cluster's key prefix (checked). */
  readonly prefix: string;
  /** Gets a debug line for each connection error (none: only the last error is kept, for the messages). */
  readonly logger?: Logger;
  readonly clock?: Timers;
}

/** The cluster's status and actions from outside the nodes, with its connections. */
export interface RemoteStatus {
  /** Where Redis is, for messages (no password). */
  readonly where: string;
  /** The key prefix read. */
  readonly prefix: string;
  /** Resolves once Redis answers; rejects after `waitMs`. */
  ready(waitMs: number): Promise<void>;
  /** The last connection error, for the message when Redis is unreachable. */
  lastError(): string | undefined;
  /** The cluster's status (what `GET /manage/jobs` returns). */
  status(): Promise<ClusterStatus>;
  /** The cluster's executors (what `GET /manage/executors` returns); a queue whose counts cannot be read shows zeros, told to `onCountsError`. */
  executors(onCountsError: (queue: string, err: unknown) => void): Promise<ExecutorStats[]>;
  /** Removes a job that no live node registers (refused while one does). */
  forget(jobId: string): Promise<ForgetResult>;
  /**
   * The status API (for the MCP tools), subscribed to the nodes' answers; waits at most `waitMs`
   * for Redis. `logger` gets its failed reads.
   */
  manage(waitMs: number, logger: Logger): Promise<ManageApi>;
  /** Closes the connections. */
  close(): Promise<void>;
}

/**
 * Opens the cluster's status at `target`.
 * @throws LeaseholdError `invalidConfig` for a bad address (the message hides a password).
 */
export function openRemote(opts: RemoteOptions): RemoteStatus {
  const clock = opts.clock ?? systemClock;
  const connections = redisConnections({ target: opts.target }, opts.logger);
  const keys = keyNames(opts.prefix);
  const redis = connections.open('command');
  return {
    where: describeTarget(opts.target),
    prefix: opts.prefix,
    ready: (waitMs) => whenReady(redis, waitMs, clock),
    lastError: () => connections.lastError(),
    status: () => readCluster(redis, keys),
    async executors(onCountsError) {
      const { rows } = await readBoard(redis, keys.executors, clock.now());
      return mergeQueues(redis, keys.prefix, rows, onCountsError);
    },
    forget: (jobId) => forgetJob(redis, keys, jobId),
    async manage(waitMs, logger) {
      const remote = remoteManageApi({ redis, sub: connections.open('control'), keys, logger, clock });
      await remote.start(waitMs);
      return remote.api;
    },
    close: () => connections.close(),
  };
}
