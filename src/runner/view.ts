/**
 * What the runner shows of its jobs: the public {@link JobInfo}, and the internal view with
 * the definition and the trigger that the status layer and the metrics read.
 * @module
 */
import type { AbortReasonCode } from '../errors.js';
import type { JobScope, NormalizedJob } from '../schedule/job.js';
import type { DeclaredSchedule } from '../schedule/setting.js';
import type { EffectiveSchedule } from '../schedule/trigger.js';
import type { JobState } from './events.js';
import type { Slot } from './slot.js';

/**
 * A job as a runner knows it now: what `runner.add` and `runner.jobs()` answer. Its times are
 * ISO-8601 strings, as in the cluster's status (`runner.status()`, `GET /manage/jobs`); the
 * runner's events carry epoch milliseconds, as the clock reads them.
 */
export interface JobInfo {
  /** The id. */
  readonly id: string;
  /** `instance` or `installation`. */
  readonly scope: JobScope;
  /** Free text from the job's definition. */
  readonly description: string | undefined;
  /** `ok`, `paused`, or `invalidSchedule` (see `invalidCause`). */
  readonly state: JobState;
  /** Why the schedule is invalid; undefined when it is valid. */
  readonly invalidCause: string | undefined;
  /** The schedule as it applies now (settings and environment applied); null while it is invalid. */
  readonly schedule: {
    readonly kind: 'cron' | 'fixedRate' | 'fixedDelay';
    /** The cron expression, or the period (`10s`). */
    readonly expression: string;
    /** The cron's zone; undefined for fixed schedules. */
    readonly zone: string | undefined;
    /** The nominal interval, ms. */
    readonly intervalMs: number;
  } | null;
  /** The next tick (ISO-8601, on the shared clock); null when none is planned. */
  readonly nextDueAt: string | null;
  /** The run in progress on this node. */
  readonly running:
    | {
        /** The run's id. */
        readonly runId: string;
        /** When its handler was called (ISO-8601). */
        readonly startedAt: string;
        /** Why it was aborted, once it was; it ends when its handler settles. */
        readonly aborted: AbortReasonCode | undefined;
      }
    | undefined;
}

/** The public view of a job from the runner's internal one. */
export function jobInfo(v: JobView): JobInfo {
  const t = v.schedule?.trigger;
  return {
    id: v.job.id,
    scope: v.job.scope,
    description: v.job.description,
    state: v.state,
    invalidCause: v.invalidCause,
    schedule: t ? { kind: t.kind, expression: t.expression, zone: t.zone, intervalMs: t.intervalMs } : null,
    nextDueAt: iso(v.nextDueAt),
    running: v.running ? { runId: v.running.runId, startedAt: new Date(v.running.startedAt).toISOString(), aborted: v.running.aborted } : undefined,
  };
}

/** Epoch ms as ISO-8601 text; null when there is none or a Date cannot hold it. */
function iso(ms: number | null): string | null {
  return ms === null || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15 ? null : new Date(ms).toISOString();
}

/** A read-only view of a job the runner knows, with its definition and trigger (internal). */
export interface JobView {
  readonly job: NormalizedJob;
  readonly state: JobState;
  readonly invalidCause: string | undefined;
  readonly schedule: EffectiveSchedule | undefined;
  /** The declared schedule with its environment settings read. */
  readonly declared: DeclaredSchedule;
  readonly nextDueAt: number | null;
  readonly running: { readonly runId: string; readonly startedAt: number; readonly aborted: AbortReasonCode | undefined } | undefined;
}

/** The internal view of a slot. */
export function view(s: Slot): JobView {
  return {
    job: s.job,
    state: s.state,
    invalidCause: s.invalidCause,
    schedule: s.effective,
    declared: s.declared,
    nextDueAt: s.nextAt,
    running: s.running ? { runId: s.running.runId, startedAt: s.running.startedAt, aborted: s.running.abortedReason } : undefined,
  };
}
