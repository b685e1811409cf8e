/**
 * Durations: a number of milliseconds, or a string such as `500ms`, `10s`, `5m`, `1h`, `1d`.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';

/** A duration: milliseconds as a number, or a string like `500ms`, `10s`, `5m`, `1h`. */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;
/** Longer than any timer Node can arm (2^31-1 ms is about 24.8 days). */
const MAX_MS = 2_147_483_647;

/**
 * Parses a duration into milliseconds.
 *
 * @param value - the duration; a bare digit string counts as milliseconds.
 * @param what - names the input in the error, e.g. `job "digest": field "timeout"`.
 * @param allowZero - whether `0` is accepted (an initial delay may be zero, a period may not).
 * @throws LeaseholdError `invalidDuration` naming `what` and the value.
 */
export function parseDuration(value: unknown, what: string, allowZero = false): number {
  let ms: number | undefined;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const m = PATTERN.exec(value.trim());
    if (m) ms = Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1);
  }
  if (ms === undefined || !Number.isFinite(ms)) {
    throw new LeaseholdError(
      ErrorCodes.invalidDuration,
      `${what}: ${describe(value)} is not a duration (use milliseconds or a string like 500ms, 10s, 5m, 1h)`,
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
