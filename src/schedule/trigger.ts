/**
 * Triggers: a job's effective schedule (its declaration, read in the environment the runner
 * hands in, with settings overrides applied) as a function from one moment to its next tick.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { parseCron, remember, validateZone } from '../cron/index.js';
import { readDuration, formatDuration } from './duration.js';
import type { NormalizedJob } from './job.js';
import type { DeclaredSchedule } from './setting.js';

/** What a trigger computes. All times are epoch milliseconds. */
export interface Trigger {
  readonly kind: 'cron' | 'fixedRate' | 'fixedDelay';
  /** Cron expression, or the period as a duration string. */
  readonly expression: string;
  /** The cron's zone; `undefined` for fixed schedules. */
  readonly zone: string | undefined;
  /** Identity of the schedule: two triggers with equal keys fire alike. */
  readonly key: string;
  /** The nominal interval, used for default timeouts, grace and health. */
  readonly intervalMs: number;
  /**
   * cron and fixedRate: the first tick of the grid strictly after `after`.
   * fixedDelay: `after` plus the delay (`after` is the previous run's end).
   * `null` when the schedule never fires again.
   */
  next(after: number): number | null;
}

/** Overrides read from the settings hash for one job (field names without the `<jobId>.` prefix). */
export interface JobOverrides {
  readonly paused?: string;
  readonly cron?: string;
  readonly zone?: string;
  readonly fixedRate?: string;
  readonly fixedDelay?: string;
  readonly timeout?: string;
  readonly lease?: string;
}

/** A job's schedule and limits as they apply to the next fire. */
export interface EffectiveSchedule {
  readonly trigger: Trigger;
  readonly timeoutMs: number;
  readonly leaseMs: number;
  /** Override values that were wrong and ignored (not schedule values: those throw). */
  readonly warnings: readonly string[];
}

const HOUR = 3_600_000;
/** The warnings of the many schedules that have none: one array, not one per job. */
const NO_WARNINGS: readonly string[] = Object.freeze([]);

/**
 * A cron trigger. Triggers are immutable and shared (kept in the cron cache): jobs on the same
 * expression and zone get the same one, so ten thousand jobs on one schedule compute each tick
 * once.
 */
export function cronTrigger(expression: string, zone: string | undefined, key?: string): Trigger {
  return remember(`trigger ${expression}\n${zone ?? ''}\n${key ?? ''}`, (): Trigger => {
    const z = validateZone(zone ?? 'UTC');
    const next = memoNext(parseCron(expression, { zone: z }));
    return { kind: 'cron', expression, zone: z, key: key ?? `cron ${expression} ${z}`, intervalMs: estimateInterval(next), next };
  });
}

/** How many answers a cron trigger's `next` remembers. */
const REMEMBERED = 4;

/**
 * `next` of a cron schedule that remembers its last few answers: an answer holds for any
 * instant from the earliest `after` that gave it up to (not including) the tick found, since
 * no tick lies between. The jobs due at one instant then ask croner once, not once each, and
 * so does the status's "third fire since the last success" of many jobs (three answers in a
 * row, each job from its own last success).
 * Without it, a tick of 10,000 jobs on one cron asks croner 10,000 times (docs/benchmarks.md).
 */
function memoNext(cron: ReturnType<typeof parseCron>): (after: number) => number | null {
  const known: Array<{ from: number; found: number | null }> = [];
  let oldest = 0;
  return (after) => {
    for (const k of known) if (after >= k.from && (k.found === null || after < k.found)) return k.found;
    const found = cron.next(new Date(after))?.getTime() ?? null;
    const same = known.find((k) => k.found === found);
    if (same) same.from = Math.min(same.from, after);
    else if (known.length < REMEMBERED) known.push({ from: after, found });
    else {
      known[oldest] = { from: after, found };
      oldest = (oldest + 1) % REMEMBERED;
    }
    return found;
  };
}

/**
 * A fixed-rate grid of `periodMs` anchored at `anchorMs` (epoch 0 for installation jobs, so
 * every node computes the same ticks).
 */
function fixedRateTrigger(periodMs: number, anchorMs: number): Trigger {
  const expression = formatDuration(periodMs);
  return {
    kind: 'fixedRate',
    expression,
    zone: undefined,
    key: `fixedRate ${periodMs} ${anchorMs}`,
    intervalMs: periodMs,
    next: (after) => anchorMs + (Math.floor((after - anchorMs) / periodMs) + 1) * periodMs,
  };
}

/** A fixed delay after each run's end. */
function fixedDelayTrigger(delayMs: number): Trigger {
  const expression = formatDuration(delayMs);
  return { kind: 'fixedDelay', expression, zone: undefined, key: `fixedDelay ${delayMs}`, intervalMs: delayMs, next: (after) => after + delayMs };
}

function estimateInterval(next: (after: number) => number | null): number {
  const a = next(Date.UTC(2026, 0, 1));
  const b = a === null ? null : next(a);
  return a === null || b === null ? HOUR : b - a;
}

/**
 * Applies settings overrides to a job's declared schedule.
 *
 * @param declared - the job's declared schedule with its environment settings read (`readDeclaration`).
 * @param anchorMs - the fixedRate grid's anchor for this node.
 * @param previous - the last trigger built for this job; reused when nothing changed.
 * @throws LeaseholdError when the schedule itself is invalid (the job is then `invalidSchedule`).
 */
export function resolveSchedule(
  job: NormalizedJob,
  declared: DeclaredSchedule,
  overrides: JobOverrides,
  anchorMs: number,
  previous?: Trigger,
): EffectiveSchedule {
  const set = (['cron', 'fixedRate', 'fixedDelay'] as const).filter((k) => overrides[k] !== undefined && overrides[k] !== '');
  if (set.length > 1) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `settings give two schedules (${set.map((k) => `${job.id}.${k}`).join(' and ')}); keep one`);
  }
  const kind = set[0] ?? declared.kind;
  let trigger: Trigger;
  if (kind === 'cron') {
    const cron = declared.kind === 'cron' ? declared : undefined;
    const expr = overrides.cron || (cron ? cron.value : '');
    const zoneValue = overrides.zone || (cron?.zone === undefined ? 'UTC' : cron.zone);
    const key = `cron ${expr} ${zoneValue}`;
    trigger = previous?.key === key ? previous : cronTrigger(expr, zoneValue, key);
  } else {
    const raw = overrides[kind] || (declared.kind === kind ? declared.value : '');
    const ms = readDuration(raw, `${kind} of job "${job.id}"`);
    // Resolved at every fire: reuse the previous trigger unless the schedule changed.
    const key = kind === 'fixedRate' ? `fixedRate ${ms} ${anchorMs}` : `fixedDelay ${ms}`;
    trigger = previous?.key === key ? previous : kind === 'fixedRate' ? fixedRateTrigger(ms, anchorMs) : fixedDelayTrigger(ms);
  }

  let warnings: string[] | undefined;
  const limit = (field: 'timeout' | 'lease', defined: number | undefined): number | undefined => {
    const raw = overrides[field];
    if (raw === undefined || raw === '') return defined;
    try {
      return readDuration(raw, `${job.id}.${field}`);
    } catch (err) {
      (warnings ??= []).push(`${(err as Error).message}; keeping ${defined === undefined ? 'the default' : formatDuration(defined)}`);
      return defined;
    }
  };
  const timeoutMs = limit('timeout', job.timeoutMs) ?? defaultTimeout(trigger);
  const leaseMs = Math.max(200, limit('lease', job.leaseMs) ?? job.leaseMs);
  return { trigger, timeoutMs, leaseMs, warnings: warnings ?? NO_WARNINGS };
}

/** SPEC 3.3: the larger of 5 minutes and 3 intervals; an hour for a cron. */
function defaultTimeout(trigger: Trigger): number {
  if (trigger.kind === 'cron') return HOUR;
  return Math.min(2_147_483_647, Math.max(5 * 60_000, 3 * trigger.intervalMs));
}
