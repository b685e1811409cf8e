/**
 * The cluster's status as `GET /manage/jobs` and `leasehold status --json` return it, built
 * only from what is in Redis (and Redis's clock), so every node computes the same answer.
 * Pure: the raw hashes in, the model out.
 * @module
 */
import type { RecentRun } from './batch.js';
import { SETTING_FIELDS } from './settings.js';
import { count, isoOrNull, num, text, time } from './fields.js';
import { degradedReasons, successDeadline, type HealthContext } from './health.js';

/** Counters of a job's stats hash, by name. */
const JOB_COUNTERS = [
  'runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'cancelled',
  'overruns', 'skipped', 'skippedClaimed', 'skippedPaused', 'missed',
] as const;

/** A job's state in the status. */
export const StatusStates = { ok: 'ok', degraded: 'degraded', invalidSchedule: 'invalidSchedule', paused: 'paused', orphaned: 'orphaned' } as const;
/** One of {@link StatusStates}. */
export type StatusState = (typeof StatusStates)[keyof typeof StatusStates];

/** Default length of a failing streak that makes a job degraded. */
export const DEFAULT_FAILING_STREAK = 3;
/** A job counts as active (run by some live node) when a node wrote its stats this recently, in ms. */
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
}

type Counters<K extends string> = { [P in K]: number };

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
  /** The outcome of the last run. */
  readonly lastOutcome: string | null;
  /** The error of the last run, if it had one. */
  readonly lastError: string | null;
  /** When the last run started (ISO-8601). */
  readonly lastStartedAt: string | null;
  /** How long the last run took, ms. */
  readonly lastDurationMs: number | null;
  /** The next tick; null when none is planned. */
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
  /** Whether some node wrote its stats within 3 minutes (a job no node runs any more is inactive, and `orphaned`). */
  readonly active: boolean;
  /** When a node last registered the job (wrote its stats; every minute while one has it), ISO-8601. */
  readonly lastRegisteredAt: string | null;
  /** Consecutive unsuccessful runs (failed, timedOut, lockLost) since the last success. */
  readonly streak: number;
  /** The outcome of the last run. */
  readonly lastOutcome: string | null;
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
  /** The next tick; null when none is planned. */
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
  /** When the handler was called, epoch ms. */
  readonly startedAt: string | null;
  /** The node's last heartbeat (ISO-8601). */
  readonly lastSeenAt: string | null;
  /** How many jobs the node has. */
  readonly jobs: number | null;
}

/** `GET /manage/jobs`. */
export interface ClusterStatus {
  /** Redis time of the read, ISO-8601. */
  readonly generatedAt: string;
  /** Every job registered in Redis. */
  readonly jobs: JobStatus[];
  /** The live nodes. */
  readonly instances: InstanceStatus[];
}

/** `GET /manage/jobs/:id`: one job with its recent runs, newest first. */
export interface JobDetail extends JobStatus {
  /** The recent runs, newest first. */
  readonly recentRuns: RecentRun[];
}

/** What Redis holds about one job. */
export interface RawJob {
  /** The id. */
  readonly id: string;
  readonly stats: Record<string, string>;
  readonly instanceFields: Record<string, string>;
  readonly settings: Record<string, string>;
  readonly lease: string | null;
  readonly leasePttl: number | null;
}

/** How to judge health and liveness. */
export interface ModelContext extends HealthContext {
  /** Ids of instances whose heartbeat is alive. */
  readonly live: ReadonlySet<string>;
}

const LEASE_VALUE = /^(.*) since (\S+) tick \S+ token (\d+)$/;

/** Parses a lease value (`<holder> since <ISO> tick <ISO> token <n>`). */
export function parseLease(value: string, pttl: number | null): LeaseStatus {
  const m = LEASE_VALUE.exec(value);
  return {
    holder: m?.[1] ?? value,
    since: m?.[2] ?? null,
    fencingToken: m?.[3] === undefined ? null : Number(m[3]),
    ttlMs: pttl === null || pttl < 0 ? null : pttl,
    value,
  };
}

/** Groups `<instanceId>.<field>` fields into rows. */
function instanceRows(fields: Record<string, string>, live: ReadonlySet<string>): InstanceRow[] {
  const by = new Map<string, Record<string, string>>();
  for (const [f, v] of Object.entries(fields)) {
    const dot = f.lastIndexOf('.');
    if (dot <= 0) continue;
    const id = f.slice(0, dot);
    let row = by.get(id);
    if (!row) by.set(id, (row = {}));
    row[f.slice(dot + 1)] = v;
  }
  return [...by].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, r]) => ({
    instanceId: id,
    live: live.has(id),
    runs: count(r['runs']),
    succeeded: count(r['succeeded']),
    failed: count(r['failed']),
    timedOut: count(r['timedOut']),
    lockLost: count(r['lockLost']),
    interrupted: count(r['interrupted']),
    cancelled: count(r['cancelled']),
    overruns: count(r['overruns']),
    skipped: count(r['skipped']),
    lastOutcome: text(r['lastOutcome']),
    lastError: text(r['lastError']),
    lastStartedAt: text(r['lastStartedAt']),
    lastDurationMs: num(r['lastDurationMs']),
    nextDueAt: text(r['nextDueAt']),
  }));
}

/** Builds one job's status. */
export function jobStatus(raw: RawJob, ctx: ModelContext): JobStatus {
  const s = raw.stats;
  const invalidCause = text(s['invalidCause']);
  const paused = raw.settings['paused']?.trim().toLowerCase() === 'true';
  const seenAt = time(s['seenAt']);
  // No live node registers it (none wrote its stats lately): it left the code. Not degraded.
  const orphaned = seenAt === null || ctx.nowMs - seenAt > ACTIVE_WITHIN_MS;
  let reasons = orphaned ? [] : invalidCause ? [`invalid schedule: ${invalidCause}`] : paused ? [] : degradedReasons(s, ctx);
  const state: StatusState = orphaned ? 'orphaned' : invalidCause ? 'invalidSchedule' : paused ? 'paused' : reasons.length > 0 ? 'degraded' : 'ok';
  if (state === 'paused') reasons = [];
  const scope = s['scope'] === 'instance' || s['scope'] === 'installation' ? s['scope'] : null;
  const kind = s['scheduleKind'] === 'cron' || s['scheduleKind'] === 'fixedRate' || s['scheduleKind'] === 'fixedDelay' ? s['scheduleKind'] : null;
  const instances = scope === 'installation' ? [] : instanceRows(raw.instanceFields, ctx.live);
  let nextDueAt = text(s['nextDueAt']);
  if (scope === 'instance') {
    const due = instances.filter((r) => r.live && r.nextDueAt).map((r) => r.nextDueAt as string).sort();
    if (due.length > 0) nextDueAt = due[0] ?? nextDueAt;
  }
  const counters = {} as Counters<(typeof JOB_COUNTERS)[number]>;
  for (const c of JOB_COUNTERS) counters[c] = count(s[c]);
  return {
    id: raw.id,
    scope,
    description: text(s['description']),
    schedule: { kind, expression: text(s['schedule']), zone: text(s['zone']), intervalMs: num(s['intervalMs']) },
    state,
    invalidCause,
    degradedReasons: reasons,
    active: !orphaned,
    lastRegisteredAt: text(s['seenAt']),
    ...counters,
    streak: count(s['streak']),
    lastOutcome: text(s['lastOutcome']),
    lastError: text(s['lastError']),
    lastStartedAt: text(s['lastStartedAt']),
    lastDurationMs: num(s['lastDurationMs']),
    lastInstance: text(s['lastInstance']),
    lastSuccessAt: text(s['lastSuccessAt']),
    successDueBy: isoOrNull(successDeadline(s)),
    nextDueAt,
    createdAt: text(s['createdAt']),
    settings: raw.settings,
    lease: raw.lease === null ? null : parseLease(raw.lease, raw.leasePttl),
    instances,
  };
}

/** A job's fields in the settings hash, by name. */
export function jobSettings(settings: Record<string, string>, jobId: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of SETTING_FIELDS) {
    const v = settings[`${jobId}.${f}`];
    if (v !== undefined) out[f] = v;
  }
  return out;
}

/** Builds an instance's entry from its heartbeat hash. */
export function instanceStatus(id: string, h: Record<string, string>): InstanceStatus {
  return {
    id,
    host: text(h['host']),
    pid: num(h['pid']),
    version: text(h['version']),
    startedAt: text(h['startedAt']),
    lastSeenAt: text(h['lastSeenAt']),
    jobs: num(h['jobs']),
  };
}
