/**
 * A parsed cron expression in a zone, and its next fire time after an instant.
 *
 * croner finds the candidates; this file applies what croner does differently:
 * - croner moves a local time the clocks skip to the end of the skipped hour.
 *   Here such a time does not exist, so its candidate is dropped (its wall clock
 *   no longer matches the expression) and the search goes on.
 * - Days croner cannot express as Spring means them (`L-n`, `LW` in a list,
 *   `nW` late in the month) are found with a day filter (see compile.ts).
 * A repeated local time runs once, at its first occurrence, because every
 * pattern is a croner "fixed-time" job (see compile.ts).
 * @module
 */
import type { Cron, CronOptions } from 'croner';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { Compiled } from './compile.js';
import type { CronFields, ValueSet } from './fields.js';
import { type ResolvedZone, type WallClock, utcMs, zonedToInstant } from './zone.js';

/** A cron expression parsed for one zone. Immutable; `next` has no hidden clock. */
export interface CronSchedule {
  /** The expression as given, trimmed. */
  readonly expression: string;
  /** The normalised zone: `UTC`, `+02:00` or an IANA id. */
  readonly zone: string;
  /**
   * The first fire time strictly after `after`, or `null` when there is none
   * (`0 0 0 31 6 *`) or none within the search bound. Any year is searched
   * (a search past the year 2600 runs whole 400-year Gregorian cycles earlier).
   */
  next(after: Date): Date | null;
}

/** Searches start no earlier than 0001-01-02, where every zone has a year 1 wall clock. */
const MIN_SEARCH_MS = utcMs(1, 1, 2, 0, 0, 0);
/**
 * croner finds nothing at or after the year 3000. The Gregorian calendar repeats every 400
 * years (146,097 days, a whole number of weeks), and a zone's rules repeat too once past its
 * last listed change: so a search from year 2600 on is made 400 years (or a multiple) earlier,
 * and its answer moved back by as much.
 */
export const GREGORIAN_CYCLE_MS = 146_097 * 86_400_000;
const SHIFT_FROM_MS = utcMs(2600, 1, 1, 0, 0, 0);
/** The last instant a Date holds. */
const MAX_DATE_MS = 8.64e15;
/**
 * Dropped candidates per call, at most. A skipped local time costs one drop per
 * spring-forward night, so 128 drops in a row are decades of an expression that
 * only ever names skipped times (`0 30 2 ? 3 SUN#2` in New York), which under
 * today's rules never fires. A day filter drops at most a few days a month.
 */
const MAX_DROPS = 128;

/** The croner options that give Spring's semantics on explicit-value patterns. */
export function cronerOptions(zone: ResolvedZone): CronOptions {
  const base = { mode: '6-part', domAndDow: true, fixedTimeRule: 'no-wildcard' } as const;
  return zone.offsetMinutes === null ? { ...base, timezone: zone.id } : { ...base, utcOffset: zone.offsetMinutes };
}

class SpringCronSchedule implements CronSchedule {
  readonly #cron: Cron;
  readonly #zone: ResolvedZone;
  readonly #wall: (ms: number, out: WallClock) => WallClock;
  readonly #scratch: WallClock = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  readonly #second: ValueSet;
  readonly #minute: ValueSet;
  readonly #hour: ValueSet;
  readonly #dayFilter: ((w: WallClock) => boolean) | null;
  /** Whether croner's candidates need any check at all: not for UTC and fixed offsets without a day filter. */
  readonly #checked: boolean;
  readonly #skipsGaps: boolean;
  readonly #never: boolean;

  constructor(
    readonly expression: string,
    zone: ResolvedZone,
    fields: CronFields,
    compiled: Compiled,
    cron: Cron,
  ) {
    this.#zone = zone;
    this.#cron = cron;
    this.#wall = zone.wallClock;
    this.#second = fields.second;
    this.#minute = fields.minute;
    this.#hour = fields.hour;
    this.#dayFilter = compiled.dayFilter;
    this.#skipsGaps = zone.offsetMinutes === null;
    this.#checked = this.#skipsGaps || this.#dayFilter !== null;
    this.#never = compiled.never;
  }

  get zone(): string {
    return this.#zone.id;
  }

  next(after: Date): Date | null {
    const t = typeof (after as Partial<Date> | null)?.getTime === 'function' ? after.getTime() : Number.NaN;
    if (Number.isNaN(t)) {
      throw new LeaseholdError(ErrorCodes.invalidState, `CronSchedule.next needs a valid Date, got ${String(after)}`);
    }
    if (this.#never) return null;
    if (t >= SHIFT_FROM_MS) {
      const cycles = Math.floor((t - SHIFT_FROM_MS) / GREGORIAN_CYCLE_MS) + 1;
      const fire = this.next(new Date(t - cycles * GREGORIAN_CYCLE_MS));
      const ms = fire === null ? NaN : fire.getTime() + cycles * GREGORIAN_CYCLE_MS;
      return ms <= MAX_DATE_MS ? new Date(ms) : null; // past the last instant a Date holds: none
    }
    // croner wants a Date of this realm; a Date from another (a vm context) is copied.
    let from = after instanceof Date && t >= MIN_SEARCH_MS ? after : new Date(Math.max(t, MIN_SEARCH_MS));
    if (!this.#checked) return this.#cron.nextRun(from);
    const w = this.#scratch;
    for (let drops = 0; drops < MAX_DROPS; drops++) {
      const fire = this.#cron.nextRun(from);
      if (fire === null) return null;
      this.#wall(fire.getTime(), w);
      if (this.#skipsGaps && !(this.#second[w.second] === 1 && this.#minute[w.minute] === 1 && this.#hour[w.hour] === 1)) {
        // croner moved a skipped local time to the end of the gap: that time does not exist, so no run.
        from = fire;
      } else if (this.#dayFilter !== null && !this.#dayFilter(w)) {
        // Not the exact day: go on from just before the next local day begins.
        w.day += 1;
        w.hour = 0;
        w.minute = 0;
        w.second = 0;
        from = new Date(Math.max(zonedToInstant(this.#zone, w) - 1, fire.getTime()));
      } else {
        return fire;
      }
    }
    return null;
  }
}

/** Build the schedule over an already constructed croner instance. */
export function createSchedule(expression: string, zone: ResolvedZone, fields: CronFields, compiled: Compiled, cron: Cron): CronSchedule {
  return new SpringCronSchedule(expression, zone, fields, compiled, cron);
}
