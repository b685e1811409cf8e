/**
 * The status layer's API: what the HTTP routes (and any other adapter) ask of it. Declared
 * here, below the adapters, so that `http/` builds on `status/` and never the other way round.
 * @module
 */
import type { ClusterStatus, JobDetail } from './model.js';
import type { JobsPage, JobsQuery } from './page.js';

/** Why the node is unhealthy. */
export type HealthReason =
  | { readonly check: 'redis'; readonly message: string }
  /** The settings hash cannot be read: `code` is `corruptSettings`, `key` the key at fault. */
  | { readonly check: 'settings'; readonly code: string; readonly key: string; readonly message: string }
  | { readonly check: 'job'; readonly jobId: string; readonly state: string; readonly reasons: string[] };

/** `GET /health`: `ok` (200) or `unavailable` (503) with the reasons. */
export interface HealthReport {
  readonly status: 'ok' | 'unavailable';
  readonly reasons: HealthReason[];
}

/**
 * The cluster's executors of background tasks, as the composition root hands them to the
 * adapters (`GET /manage/executors`, the page, the MCP tools): a row per node and executor.
 */
export type ExecutorsSource = () => Promise<readonly object[]>;

/** What an admin action did: the HTTP status and the JSON body to answer with. */
export interface ActionResult {
  readonly statusCode: number;
  readonly body: Record<string, unknown>;
}

/** What the HTTP routes ask of the status layer, which implements it. */
export interface ManageApi {
  cluster(): Promise<ClusterStatus>;
  /**
   * The same as UTF-8 JSON (cached with it: large answers are not serialized per request).
   * @throws LeaseholdError `invalidQuery` above `MAX_UNPAGED_JOBS` (5,000) jobs: ask for pages.
   */
  clusterJson(): Promise<Buffer>;
  /** One page of the jobs, cut from the same cached status. */
  jobsPage(query: JobsQuery): Promise<JobsPage>;
  /** One job with its recent runs; undefined for an unknown id. */
  job(id: string): Promise<JobDetail | undefined>;
  health(): Promise<HealthReport>;
  /** Only whether this node reaches Redis (no job is judged). */
  ready(): Promise<HealthReport>;
  run(id: string): Promise<ActionResult>;
  pause(id: string): Promise<ActionResult>;
  resume(id: string): Promise<ActionResult>;
  /** Aborts the job's run in progress wherever it runs (409 when none is). */
  cancel(id: string): Promise<ActionResult>;
  /** Removes a job that no live node registers any more (refused, 409, while one does). */
  forget(id: string): Promise<ActionResult>;
}
