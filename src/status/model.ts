/**
 * The cluster's status as `GET /manage/jobs` and `leasehold status --json` return it, built
 * only from what is in Redis (and Redis's clock), so every node computes the same answer
 * (`build.ts` builds it). Every time in it is an ISO-8601 string.
 * @module
 */
import type { RunOutcome } from '../runner/events.js';
import type { RecentRun } from './batch.js';

/** A job's state in the status. */
export const StatusStates = { ok: 'ok', degraded: 'degraded', invalidSchedule: 'invalidSchedule', paused: 'paused', orphaned: 'orphaned' } as const;
/** One of {@link StatusStates}. */
export type StatusState = (typeof StatusStates)[keyof typeof StatusStates];

/** Default length of a failing streak that makes a job degraded. */
export const DEFAULT_FAILING_STREAK = 3;
/**
 * Where a live node's registrations are not known (a node of an older version), a job counts as
 * active when a node wrote its stats this recently, in ms.
 */
export const ACTIVE_WITHIN_MS = 3 * 60_000;

/** Runs by outcome, on one instance (an instance job's row). */
export interface InstanceCounters {
  /** Runs that ended, whatever their outcome. */
  readonly runs: number;
  /** Runs that succeeded. */
  readonly succeeded: number;
  /** Runs whose handler threw or rejected. */
  readonly failed: number;
  /** Runs aborted at their timeout. */
  readonly timedOut: number;
  /** Runs aborted because their lease was lost. */
  readonly lockLost: number;
  /** Runs aborted by a shutdown. */
  readonly interrupted: number;
  /** Runs an operator cancelled. */
  readonly cancelled: number;
  /** Starts skipped because the previous run was still going. */
  readonly overruns: number;
  /** Starts that did not happen, whatever the reason. */
  readonly skipped: number;
}

/** A job's cluster-wide counters. */
export interface JobCounters extends InstanceCounters {
  /** Starts skipped because another node had the tick. */
  readonly skippedClaimed: number;
  /** Starts skipped while paused. */
  readonly skippedPaused: number;
  /** Ticks that no node ran. */
  readonly missed: number;
  /**
   * Runs whose node died or froze past its lease with no outcome recorded (installation jobs),
   * recorded once by the node whose claim next found the lease expired.
   */
  readonly lost: number;
}

/** A job's schedule as the nodes last described it. */
export interface ScheduleStatus {
  /** The kind of schedule. */
  readonly kind: 'cron' | 'fixedRate' | 'fixedDelay' | null;
  /** The cron expression, or the period (`10s`). */
  readonly expression: string | null;
  /** The cron's zone; null for fixed schedules. */
  readonly zone: string | null;
  /** The nominal interval in ms. */
  readonly intervalMs: number | null;
}

/** The holder of an installation job's lease. */
export interface LeaseStatus {
  /** The instance id of the node holding the lease. */
  readonly holder: string;
  /** ISO-8601 time of the claim. */
  readonly since: string | null;
  /** The claim's fencing token (installation jobs). */
  readonly fencingToken: number | null;
  /** Remaining time to live in ms; null when the key has no TTL. */
  readonly ttlMs: number | null;
  /** The raw lease value. */
  readonly value: string;
}

/** One instance's row of an instance job. */
export interface InstanceRow extends InstanceCounters {
  /** The instance the row is about. */
  readonly instanceId: string;
  /** Whether the instance's heartbeat is alive. */
  readonly live: boolean;
  /**
   * The outcome of the last run; null before the first, or when a node of another version
   * recorded an outcome this one does not know.
   */
  readonly lastOutcome: RunOutcome | null;
  /** The error of the last run, if it had one. */
  readonly lastError: string | null;
  /** When the last run started (ISO-8601). */
  readonly lastStartedAt: string | null;
  /** How long the last run took, ms. */
  readonly lastDurationMs: number | null;
  /** The next tick (ISO-8601); null when none is planned. */
  readonly nextDueAt: string | null;
}

/** One job in the status. */
export interface JobStatus extends JobCounters {
  /** The id. */
  readonly id: string;
  /** `instance` or `installation`. */
  readonly scope: 'instance' | 'installation' | null;
  /** Free text from the job's definition. */
  readonly description: string | null;
  /** The schedule as the nodes last described it. */
  readonly schedule: ScheduleStatus;
  /** The state. */
  readonly state: StatusState;
  /** Why the schedule is invalid; null when it is valid. */
  readonly invalidCause: string | null;
  /** Why the job is degraded (also the invalid schedule's cause); empty when it is not. */
  readonly degradedReasons: string[];
  /** Whether a live node registers the job (a job no node runs any more is inactive, and `orphaned`, never degraded). */
  readonly active: boolean;
  /** When a node last registered the job (wrote its stats; every minute while one has it), ISO-8601. */
  readonly lastRegisteredAt: string | null;
  /** Consecutive unsuccessful runs (failed, timedOut, lockLost, lost) since the last success. */
  readonly streak: number;
  /**
   * The outcome of the last run; null before the first, or when a node of another version
   * recorded an outcome this one does not know.
   */
  readonly lastOutcome: RunOutcome | null;
  /** The error of the last run, if it had one. */
  readonly lastError: string | null;
  /** When the last run started (ISO-8601). */
  readonly lastStartedAt: string | null;
  /** How long the last run took, ms. */
  readonly lastDurationMs: number | null;
  /** The node that ran the last run. */
  readonly lastInstance: string | null;
  /** When the last successful run ended (ISO-8601). */
  readonly lastSuccessAt: string | null;
  /** When a success is due at the latest before the job shows as degraded (ISO-8601); three scheduled fires after the last success. */
  readonly successDueBy: string | null;
  /** The next tick (ISO-8601); null when none is planned. */
  readonly nextDueAt: string | null;
  /** When the job was first registered. */
  readonly createdAt: string | null;
  /** The job's fields in the settings hash (`paused`, `cron`, ...). */
  readonly settings: Record<string, string>;
  /** Installation jobs: who holds the lease now; null when nobody does. */
  readonly lease: LeaseStatus | null;
  /** Instance jobs: one row per instance that ran or scheduled it. */
  readonly instances: InstanceRow[];
}

/** One live node. */
export interface InstanceStatus {
  /** The node's instance id. */
  readonly id: string;
  /** The node's host name. */
  readonly host: string | null;
  /** The node's process id. */
  readonly pid: number | null;
  /** The node's leasehold version. */
  readonly version: string | null;
  /** When the node started (ISO-8601). */
  readonly startedAt: string | null;
  /** The node's last heartbeat (ISO-8601). */
  readonly lastSeenAt: string | null;
  /** How many jobs the node has. */
  readonly jobs: number | null;
}

/** Something in Redis that leasehold cannot read, for an operator to repair. */
export interface StatusProblem {
  /** The error code: `corruptSettings` (the settings hash holds a value of another type). */
  readonly code: string;
  /** The key at fault. */
  readonly key: string;
  /** What is wrong and how to repair it. */
  readonly message: string;
}

/** `GET /manage/jobs`. */
export interface ClusterStatus {
  /** Redis time of the read, ISO-8601. */
  readonly generatedAt: string;
  /** Every job registered in Redis. */
  readonly jobs: JobStatus[];
  /** The live nodes. */
  readonly instances: InstanceStatus[];
  /** What cannot be read (the settings hash holding another type): empty when all is well. */
  readonly problems: StatusProblem[];
}

/** `GET /manage/jobs/:id`: one job with its recent runs, newest first. */
export interface JobDetail extends JobStatus {
  /**
   * The recent runs, newest first. A run recorded by a node of another version with an
   * outcome this one does not know is left out.
   */
  readonly recentRuns: RecentRun[];
}
