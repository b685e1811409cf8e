/**
 * Builds the status model ({@link JobStatus}, {@link InstanceStatus}) from what Redis holds
 * about each job and node, and judges each job's state. Pure: the raw hashes in, the model out.
 * @module
 */
import { SETTING_FIELDS } from './settings.js';
import { count, isoOrNull, num, outcome, text, time } from './fields.js';
import type { Registered } from './registered.js';
import { healthFacts, reasonsOf, type HealthContext, type HealthFacts } from './health.js';
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

/** What a read finds of a job besides its stats: read anew at every read. */
export interface JobNow {
  readonly settings: Record<string, string>;
  readonly lease: string | null;
  readonly leasePttl: number | null;
}

/**
 * A job's status, and what judging it again needs: kept between reads of the whole status
 * while its stats hash keeps its `version` (see record.lua), so the stats of a job that did
 * not run since are neither read nor parsed again.
 */
export interface KnownJob {
  /** The stats hash's `version` and `createdAt` when read ({@link statsVersion}). */
  readonly version: string;
  readonly status: JobStatus;
  readonly health: HealthFacts;
  /** When a node last registered the job, epoch ms. */
  readonly seenAt: number | null;
  /** The stats hash's `nextDueAt` (an instance job shows its live rows' earliest instead). */
  readonly nextDueAt: string | null;
}

/**
 * The version of a stats hash from its `version` and `createdAt` fields: a hash deleted and
 * made again starts its `version` again, but not its `createdAt`. Undefined when it has no
 * `version` (written only by nodes of an older version, which do not raise it): read each time.
 */
export function statsVersion(version: string | null | undefined, createdAt: string | null | undefined): string | undefined {
  return version ? `${version} ${createdAt ?? ''}` : undefined;
}

/** The part of a job's status that depends on the moment, its settings, lease and the live nodes. */
interface Judgement {
  readonly state: StatusState;
  readonly degradedReasons: string[];
  readonly active: boolean;
  readonly nextDueAt: string | null;
  readonly settings: Record<string, string>;
  readonly lease: LeaseStatus | null;
  readonly instances: InstanceRow[];
}

function judge(id: string, k: Omit<KnownJob, 'version' | 'status'>, invalidCause: string | null, scope: JobStatus['scope'], rows: InstanceRow[], now: JobNow, ctx: ModelContext): Judgement {
  const paused = now.settings['paused']?.trim().toLowerCase() === 'true';
  // No live node registers it (or, where that is not known, none wrote its stats lately): it
  // left the code. Not degraded.
  const registered = ctx.registered?.(id);
  const orphaned = registered === undefined ? k.seenAt === null || ctx.nowMs - k.seenAt > ACTIVE_WITHIN_MS : !registered;
  let reasons = orphaned ? [] : invalidCause ? [`invalid schedule: ${invalidCause}`] : paused ? [] : reasonsOf(k.health, ctx);
  const state: StatusState = orphaned ? 'orphaned' : invalidCause ? 'invalidSchedule' : paused ? 'paused' : reasons.length > 0 ? 'degraded' : 'ok';
  if (state === 'paused' || reasons.length === 0) reasons = NO_REASONS;
  // No tick is due of a paused job or of one that left the code: the last one written has passed.
  let nextDueAt = state === 'paused' || state === 'orphaned' ? null : k.nextDueAt;
  if (scope === 'instance' && nextDueAt !== null) {
    const due = rows.filter((r) => r.live && r.nextDueAt).map((r) => r.nextDueAt as string).sort();
    if (due.length > 0) nextDueAt = due[0] ?? nextDueAt;
  }
  return {
    state,
    degradedReasons: reasons,
    active: !orphaned,
    nextDueAt,
    settings: now.settings,
    lease: now.lease === null ? null : parseLease(now.lease, now.leasePttl),
    instances: rows,
  };
}

/** Builds one job's status. */
export function jobStatus(raw: RawJob, ctx: ModelContext): JobStatus {
  return knownJob(raw, '', ctx).status;
}

/** Builds one job's status from its stats, with what judging it again needs; see {@link KnownJob}. */
export function knownJob(raw: RawJob, version: string, ctx: ModelContext): KnownJob {
  const s = raw.stats;
  const intern = ctx.intern ?? same;
  const shared = (v: string | undefined): string | null => (v === undefined || v === '' ? null : intern(v));
  const invalidCause = text(s['invalidCause']);
  const scope = s['scope'] === 'instance' || s['scope'] === 'installation' ? s['scope'] : null;
  const kind = s['scheduleKind'] === 'cron' || s['scheduleKind'] === 'fixedRate' || s['scheduleKind'] === 'fixedDelay' ? s['scheduleKind'] : null;
  const facts = { health: healthFacts(s), seenAt: time(s['seenAt']), nextDueAt: shared(s['nextDueAt']) };
  const rows = scope === 'installation' ? NO_ROWS : instanceRows(raw.instanceFields, ctx.live);
  const j = judge(raw.id, facts, invalidCause, scope, rows, raw, ctx);
  const dueBy = isoOrNull(facts.health.deadline);
  // Every field written out in one literal: the object holds them all in itself.
  const status: JobStatus = {
    id: raw.id,
    scope,
    description: text(s['description']),
    schedule: { kind, expression: shared(s['schedule']), zone: shared(s['zone']), intervalMs: num(s['intervalMs']) },
    state: j.state,
    invalidCause,
    degradedReasons: j.degradedReasons,
    active: j.active,
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
    nextDueAt: j.nextDueAt,
    createdAt: shared(s['createdAt']),
    settings: j.settings,
    lease: j.lease,
    instances: j.instances,
  };
  return { version, status, ...facts };
}

/**
 * A known job judged again at this read, its stats unchanged but for `seenAt` (read with the
 * version, as a node's minute refresh changes it alone): the same object when nothing in its
 * status moved (most jobs at most reads), else one with its new state, settings, lease and
 * `lastRegisteredAt`.
 */
export function rejudge(known: KnownJob, now: JobNow, ctx: ModelContext, seenAt: string | undefined): KnownJob {
  const prev = known.status;
  const registeredAt = seenAt || null;
  const seen = registeredAt === prev.lastRegisteredAt;
  const k = seen ? known : { ...known, seenAt: time(seenAt) };
  const rows = liveRows(prev.instances, ctx.live);
  const j = judge(prev.id, k, prev.invalidCause, prev.scope, rows, now, ctx);
  if (
    seen &&
    j.state === prev.state &&
    j.active === prev.active &&
    j.nextDueAt === prev.nextDueAt &&
    j.lease === null && prev.lease === null &&
    j.instances === prev.instances &&
    sameTexts(j.degradedReasons, prev.degradedReasons) &&
    sameFields(j.settings, prev.settings)
  ) return known;
  const lastRegisteredAt = seen || registeredAt === null ? registeredAt : (ctx.intern ?? same)(registeredAt);
  return { ...k, status: { ...prev, ...j, lastRegisteredAt } };
}

/** The rows with their `live` as `live` says: the same array when none changed. */
function liveRows(rows: InstanceRow[], live: ReadonlySet<string>): InstanceRow[] {
  if (rows.every((r) => r.live === live.has(r.instanceId))) return rows;
  return rows.map((r) => (r.live === live.has(r.instanceId) ? r : { ...r, live: !r.live }));
}

function sameTexts(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((x, i) => x === b[i]));
}

function sameFields(a: Record<string, string>, b: Record<string, string>): boolean {
  if (a === b) return true;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
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
