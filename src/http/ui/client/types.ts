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

/** The `changes` event of `GET /manage/events`. */
export interface Changes {
  readonly generatedAt: string;
  readonly jobs: import('../../../status/model.js').JobStatus[];
  readonly removed: string[];
  readonly instances?: import('../../../status/model.js').InstanceStatus[];
}

/** An admin action of the page. */
export type Action = 'pause' | 'resume' | 'run' | 'cancel';
