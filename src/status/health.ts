/**
 * When a job is degraded for want of a success (SPEC 5): a failing streak, or three scheduled
 * fires passed since its last success, counted on its real schedule. Pure: the stats hash in.
 * @module
 */
import { cronTrigger } from '../schedule/trigger.js';
import { count, duration, num, time } from './fields.js';

/** Slack added to the third fire without a success, besides the last run's duration, in ms. */
export const NO_SUCCESS_SLACK_MS = 2_000;

/** How to judge a job's health. */
export interface HealthContext {
  /** Redis time, epoch ms. */
  readonly nowMs: number;
  /** Streak length from which a job is degraded. */
  readonly failingStreak: number;
}

/** The number of scheduled fires without a success after which a job is degraded (SPEC 5). */
const FIRES_WITHOUT_SUCCESS = 3;

/**
 * When a success is due at the latest: the {@link FIRES_WITHOUT_SUCCESS}th scheduled fire after
 * the baseline (the last success, or the job's registration, resume or schedule change), plus
 * the last run's duration and {@link NO_SUCCESS_SLACK_MS}. Counted on the job's real schedule,
 * so `0 0 9-17 * * MON-FRI` is not due at night; for fixedRate and fixedDelay, three periods.
 * Epoch ms, or null when the schedule is unknown or never fires that often again. `baseline`
 * is the stats' own, passed by a caller that has it already.
 */
export function successDeadline(stats: Record<string, string>, baseline = baselineOf(stats)): number | null {
  if (!Number.isFinite(baseline)) return null;
  let due: number | null;
  if (stats['scheduleKind'] === 'cron') {
    const next = cronNext(stats['schedule'], stats['zone']);
    due = next ? baseline : null;
    for (let i = 0; i < FIRES_WITHOUT_SUCCESS && due !== null && next; i++) due = next(due);
  } else {
    const interval = num(stats['intervalMs']);
    due = interval !== null && interval > 0 ? baseline + FIRES_WITHOUT_SUCCESS * interval : null;
  }
  return due === null ? null : due + (num(stats['lastDurationMs']) ?? 0) + NO_SUCCESS_SLACK_MS;
}

/** The last success, registration, resume or schedule change, epoch ms (-Infinity: none). */
function baselineOf(stats: Record<string, string>): number {
  return Math.max(time(stats['lastSuccessAt']) ?? -Infinity, time(stats['createdAt']) ?? -Infinity, time(stats['resumedAt']) ?? -Infinity);
}

/** The next fire of a stored cron schedule, or undefined when it does not parse. */
function cronNext(expression: string | undefined, zone: string | undefined): ((after: number) => number | null) | undefined {
  if (!expression) return undefined;
  try {
    return cronTrigger(expression, zone || 'UTC').next;
  } catch {
    return undefined; // not a schedule leasehold wrote: no deadline from it
  }
}

/**
 * What judging a job's health needs of its stats, read once per version of them: the stats
 * of a job that did not run since the last read are not read or parsed again.
 */
export interface HealthFacts {
  /** Unsuccessful runs since the last success. */
  readonly streak: number;
  /** {@link successDeadline}. */
  readonly deadline: number | null;
  /** The last success, registration, resume or schedule change, epoch ms (-Infinity: none). */
  readonly baseline: number;
  /** Whether the job ever succeeded. */
  readonly succeeded: boolean;
  /** Whether its schedule is a cron expression. */
  readonly cron: boolean;
  /** Its fixedRate or fixedDelay interval, ms. */
  readonly intervalMs: number | null;
}

/** The {@link HealthFacts} of a stats hash. */
export function healthFacts(stats: Record<string, string>): HealthFacts {
  const baseline = baselineOf(stats);
  return {
    streak: count(stats['streak']),
    deadline: successDeadline(stats, baseline),
    baseline,
    succeeded: Boolean(stats['lastSuccessAt']),
    cron: stats['scheduleKind'] === 'cron',
    intervalMs: num(stats['intervalMs']),
  };
}

/** Why a job is degraded, from its stats; see SPEC 5 (failing streak, no success for 3 scheduled fires). */
export function degradedReasons(stats: Record<string, string>, ctx: HealthContext): string[] {
  return reasonsOf(healthFacts(stats), ctx);
}

/** {@link degradedReasons} from a job's {@link HealthFacts}. */
export function reasonsOf(f: HealthFacts, ctx: HealthContext): string[] {
  const reasons: string[] = [];
  if (f.streak >= ctx.failingStreak) reasons.push(`failing streak: the last ${f.streak} runs were unsuccessful (threshold ${ctx.failingStreak})`);
  if (f.deadline !== null && ctx.nowMs > f.deadline) {
    const since = duration(ctx.nowMs - f.baseline);
    const what = f.succeeded ? 'no successful run' : 'never a successful run';
    reasons.push(f.cron || f.intervalMs === null
      ? `${what} for ${since}: ${FIRES_WITHOUT_SUCCESS} scheduled fires have passed without one`
      : `${what} for ${since}, more than ${FIRES_WITHOUT_SUCCESS} intervals of ${duration(f.intervalMs)}`);
  }
  return reasons;
}
