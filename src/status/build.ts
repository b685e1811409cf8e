/**
 * Builds the status model ({@link JobStatus}, {@link InstanceStatus}) from what Redis holds
 * about each job and node, and judges each job's state. Pure: the raw hashes in, the model out.
 * @module
 */
import { SETTING_FIELDS } from './settings.js';
import { count, isoOrNull, num, outcome, text, time } from './fields.js';
import type { Registered } from './registered.js';
import { degradedReasons, successDeadline, type HealthContext } from './health.js';
import { ACTIVE_WITHIN_MS, type InstanceRow, type InstanceStatus, type JobStatus, type LeaseStatus, type StatusState } from './model.js';

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
  /** Whether a live node registers a job (undefined: not known, the job's last write decides). */
  readonly registered?: Registered;
  /**
   * One text for equal values of a read (see {@link interning}): the schedules, zones, nodes and
   * times that thousands of jobs share are then held once.
   */
  readonly intern?: (value: string) => string;
}

/**
 * A function that answers the first text equal to the one it is given: a read of many jobs
 * gets from Redis one string per job and field, and most are equal (the jobs of a schedule
 * share their expression, zone and next tick; the jobs a node wrote in one batch their `seenAt`).
 */
export function interning(): (value: string) => string {
  const seen = new Map<string, string>();
  return (value) => {
    const known = seen.get(value);
    if (known !== undefined) return known;
    seen.set(value, value);
    return value;
  };
}

const same = (value: string): string => value;
/** A job with nothing to list shares these (the status is read-only, as cached for every caller). */
const NO_REASONS: string[] = Object.freeze([]) as unknown as string[];
const NO_ROWS: InstanceRow[] = Object.freeze([]) as unknown as InstanceRow[];

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
    lastOutcome: outcome(r['lastOutcome']),
    lastError: text(r['lastError']),
    lastStartedAt: text(r['lastStartedAt']),
    lastDurationMs: num(r['lastDurationMs']),
    nextDueAt: text(r['nextDueAt']),
  }));
}

/** Builds one job's status. */
export function jobStatus(raw: RawJob, ctx: ModelContext): JobStatus {
  const s = raw.stats;
  const intern = ctx.intern ?? same;
  const shared = (v: string | undefined): string | null => (v === undefined || v === '' ? null : intern(v));
  const invalidCause = text(s['invalidCause']);
  const paused = raw.settings['paused']?.trim().toLowerCase() === 'true';
  const seenAt = time(s['seenAt']);
  // No live node registers it (or, where that is not known, none wrote its stats lately): it
  // left the code. Not degraded.
  const registered = ctx.registered?.(raw.id);
  const orphaned = registered === undefined ? seenAt === null || ctx.nowMs - seenAt > ACTIVE_WITHIN_MS : !registered;
  let reasons = orphaned ? [] : invalidCause ? [`invalid schedule: ${invalidCause}`] : paused ? [] : degradedReasons(s, ctx);
  const state: StatusState = orphaned ? 'orphaned' : invalidCause ? 'invalidSchedule' : paused ? 'paused' : reasons.length > 0 ? 'degraded' : 'ok';
  if (state === 'paused' || reasons.length === 0) reasons = NO_REASONS;
  const scope = s['scope'] === 'instance' || s['scope'] === 'installation' ? s['scope'] : null;
  const kind = s['scheduleKind'] === 'cron' || s['scheduleKind'] === 'fixedRate' || s['scheduleKind'] === 'fixedDelay' ? s['scheduleKind'] : null;
  const instances = scope === 'installation' ? NO_ROWS : instanceRows(raw.instanceFields, ctx.live);
  let nextDueAt = shared(s['nextDueAt']);
  if (scope === 'instance') {
    const due = instances.filter((r) => r.live && r.nextDueAt).map((r) => r.nextDueAt as string).sort();
    if (due.length > 0) nextDueAt = due[0] ?? nextDueAt;
  }
  const dueBy = isoOrNull(successDeadline(s));
  // Every field written out in one literal: the object holds them all in itself.
  return {
    id: raw.id,
    scope,
    description: text(s['description']),
    schedule: { kind, expression: shared(s['schedule']), zone: shared(s['zone']), intervalMs: num(s['intervalMs']) },
    state,
    invalidCause,
    degradedReasons: reasons,
    active: !orphaned,
    lastRegisteredAt: shared(s['seenAt']),
    runs: count(s['runs']),
    succeeded: count(s['succeeded']),
    failed: count(s['failed']),
    timedOut: count(s['timedOut']),
    lockLost: count(s['lockLost']),
    lost: count(s['lost']),
    interrupted: count(s['interrupted']),
    cancelled: count(s['cancelled']),
    overruns: count(s['overruns']),
    skipped: count(s['skipped']),
    skippedClaimed: count(s['skippedClaimed']),
    skippedPaused: count(s['skippedPaused']),
    missed: count(s['missed']),
    streak: count(s['streak']),
    lastOutcome: outcome(s['lastOutcome']),
    lastError: shared(s['lastError']),
    lastStartedAt: shared(s['lastStartedAt']),
    lastDurationMs: num(s['lastDurationMs']),
    lastInstance: shared(s['lastInstance']),
    lastSuccessAt: shared(s['lastSuccessAt']),
    successDueBy: dueBy === null ? null : intern(dueBy),
    nextDueAt,
    createdAt: shared(s['createdAt']),
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
