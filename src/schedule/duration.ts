/**
 * Durations: a number of milliseconds, or a string such as `500ms`, `10s`, `5m`, `1h`, `1d`.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** The unit of a duration written as a string: milliseconds, seconds, minutes, hours, days. */
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/**
 * A duration: milliseconds as a number, or a number with a unit, `500ms`, `10s`, `5m`, `1.5h`,
 * `1d`. The type refuses a malformed string (`'5 min'`, `'soon'`) where it is written; a
 * value read at run time (an environment variable, a setting) is checked then.
 */
export type Duration = number | `${number}${DurationUnit}`;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;
/** Longer than any timer Node can arm (2^31-1 ms is about 24.8 days). */
const MAX_MS = 2_147_483_647;

/**
 * A duration as leasehold reads one in job definitions, options and settings.
 *
 * @param value - milliseconds, or a string such as `500ms`, `10s`, `5m`, `1h`, `1d` (any string:
 * one read from outside is checked here); a bare digit string counts as milliseconds.
 * @returns whole milliseconds: zero or more, at most about 24 days (the longest timer Node arms).
 * @throws LeaseholdError `invalidDuration` naming the value.
 * @example `parseDuration('90s')` is `90000`.
 */
export function parseDuration(value: Duration | string): number {
  return readDuration(value, 'duration', true);
}

/**
 * Reads a duration from any input into milliseconds, for the checks of definitions and options.
 *
 * @param value - the duration; a bare digit string counts as milliseconds.
 * @param what - names the input in the error, e.g. `job "digest": field "timeout"`.
 * @param allowZero - whether `0` is accepted (an initial delay may be zero, a period may not).
 * @throws LeaseholdError `invalidDuration` naming `what` and the value.
 */
export function readDuration(value: unknown, what: string, allowZero = false): number {
  let ms: number | undefined;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const m = PATTERN.exec(value.trim());
    if (m) ms = Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1);
  }
  if (ms === undefined || !Number.isFinite(ms)) {
    const fix = typeof value === 'string' ? spelledOut(value) : undefined;
    throw new LeaseholdError(
      ErrorCodes.invalidDuration,
      `${what}: ${describe(value)} is not a duration (${fix === undefined ? '' : `use ${JSON.stringify(fix)}; `}use milliseconds or a string like 500ms, 10s, 5m, 1h)`,
    );
  }
  // Whole milliseconds are what a timer waits: 0.4 is 0, which is no period (it would divide by zero).
  const whole = Math.round(ms) + 0;
  if (ms < 0 || (!allowZero && whole === 0)) {
    throw new LeaseholdError(ErrorCodes.invalidDuration, `${what}: ${describe(value)} must be ${allowZero ? 'zero or more' : 'more than zero'}`);
  }
  if (whole > MAX_MS) {
    throw new LeaseholdError(ErrorCodes.invalidDuration, `${what}: ${describe(value)} is too long (at most 24 days)`);
  }
  return whole;
}

/** Units as people spell them out, by the unit a duration takes. */
const SPELLED: Readonly<Record<string, string>> = {
  ...Object.fromEntries(['msec', 'msecs', 'millis', 'millisecond', 'milliseconds'].map((w) => [w, 'ms'])),
  ...Object.fromEntries(['sec', 'secs', 'second', 'seconds'].map((w) => [w, 's'])),
  ...Object.fromEntries(['min', 'mins', 'minute', 'minutes'].map((w) => [w, 'm'])),
  ...Object.fromEntries(['hr', 'hrs', 'hour', 'hours'].map((w) => [w, 'h'])),
  ...Object.fromEntries(['day', 'days'].map((w) => [w, 'd'])),
};

/** `5 min` as a duration is written (`5m`), or undefined when the unit is no spelled-out one. */
function spelledOut(text: string): string | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([A-Za-z]+)$/.exec(text.trim());
  const unit = m ? SPELLED[(m[2] ?? '').toLowerCase()] : undefined;
  return unit === undefined ? undefined : `${m?.[1] ?? ''}${unit}`;
}

/** Renders a value for an error message without dumping large objects. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return `a ${Array.isArray(value) ? 'array' : typeof value}`;
}

/** Formats milliseconds back into the shortest exact duration string (`90000` → `90s`). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit] ?? 1;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
