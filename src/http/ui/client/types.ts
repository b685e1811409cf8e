/**
 * The JSON the page reads, typed by the status model itself (types only: nothing of the
 * server is bundled into the page).
 * @module
 */
export type { ClusterStatus, InstanceStatus, JobDetail, JobStatus, LeaseStatus, ScheduleStatus, StatusState } from '../../../status/model.js';
export type { RecentRun } from '../../../status/batch.js';

/** `GET /manage/access`. */
export interface Access {
  readonly adminEnabled: boolean;
  readonly readProtected: boolean;
  readonly metricsProtected: boolean;
}

/**
 * One executor of background tasks as `GET /manage/executors` lists it: a row per node for a
 * `loop` or `worker` executor, one row for a `queue` executor (its figures are the cluster's).
 */
export interface ExecutorRow {
  readonly name: string;
  readonly kind: string;
  /** The node of a loop or worker executor's row; absent for a queue. */
  readonly instanceId?: string;
  readonly concurrency: number;
  readonly active: number;
  /** Tasks waiting: the queue depth. */
  readonly queued: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly timedOut: number;
  readonly cancelled: number;
  readonly interrupted: number;
}

/** A large installation's jobs as the event stream counts them (it then sends no job). */
export interface PagedSummary {
  readonly total: number;
  readonly states: Readonly<Record<string, number>>;
}

/** `GET /manage/jobs?limit=...`: a page of the jobs (`JobsPage` of the status layer). */
export interface JobsPage {
  readonly generatedAt: string;
  readonly jobs: import('../../../status/model.js').JobStatus[];
  readonly total: number;
  readonly nextCursor: string | null;
}

/** The `snapshot` event of `GET /manage/events`. */
export type Snapshot = import('../../../status/model.js').ClusterStatus & { readonly executors?: ExecutorRow[]; readonly paged?: PagedSummary };

/** The `changes` event of `GET /manage/events`. */
export interface Changes {
  readonly generatedAt: string;
  readonly jobs: import('../../../status/model.js').JobStatus[];
  readonly removed: string[];
  readonly instances?: import('../../../status/model.js').InstanceStatus[];
  readonly executors?: ExecutorRow[];
  readonly paged?: PagedSummary;
}

/** An admin action of the page. */
export type Action = 'pause' | 'resume' | 'run' | 'cancel';
