/**
 * Turns parsed Spring fields into a croner pattern with explicit values only.
 *
 * Seconds, minutes and hours are written as lists and ranges, never `*` or a
 * step: with croner's `fixedTimeRule: 'no-wildcard'` every pattern is then a
 * "fixed-time" job, which runs a repeated local time once, at its first
 * occurrence, and never moves past a time it has already passed. That is the
 * rule leasehold wants for every expression, `*` and `*\/15` included.
 *
 * Croner cannot express `L-n`, nor `LW` next to other days, and its `nW` differs
 * from Spring's when day n is a Sunday that ends the month. For those the
 * pattern lists every day that could match, and {@link Compiled.dayFilter}
 * decides the exact day.
 * @module
 */
import type { CronFields, DayOfMonthField, DayOfWeekField, ValueSet } from './fields.js';
import type { WallClock } from './zone.js';

/** A croner pattern and what croner needs checked after it. */
export interface Compiled {
  /** The six croner fields, in order. */
  readonly parts: readonly [string, string, string, string, string, string];
  /** Exact day-of-month test when the pattern lists more days than match, else `null`. */
  readonly dayFilter: ((w: WallClock) => boolean) | null;
  /** No day matches the day fields in the months named (`0 0 0 31 6 *`, `0 0 0 5 * 6L`). */
  readonly never: boolean;
}

/** `1,2,3,5,7,8,9` as `1-3,5,7-9`. */
function ranges(set: ValueSet, from: number): string {
  const out: string[] = [];
  for (let v = from; v < set.length; v++) {
    if (set[v] !== 1) continue;
    let end = v;
    while (set[end + 1] === 1) end++;
    out.push(end === v ? String(v) : `${v}-${end}`);
    v = end;
  }
  return out.join(',');
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return MONTH_DAYS[month - 1] ?? 31;
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
}

/** Day of week of a proleptic Gregorian date, 0 = Sunday (Sakamoto's method). */
function weekdayOf(year: number, month: number, day: number): number {
  const t = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4][month - 1] ?? 0;
  const y = month < 3 ? year - 1 : year;
  return (((y + Math.floor(y / 4) - Math.floor(y / 100) + Math.floor(y / 400) + t + day) % 7) + 7) % 7;
}

/**
 * Spring's `nW`: day `n` on a weekday; the Friday before a Saturday (Monday the
 * 3rd for Saturday the 1st); the Monday after a Sunday. A Sunday that ends the
 * month has no Monday after it in the month, and Spring then has no day at all
 * (croner and Quartz take the Friday before). -1 when there is no such day.
 */
function nearestWeekday(year: number, month: number, n: number): number {
  const last = daysInMonth(year, month);
  if (n > last) return -1;
  const dow = weekdayOf(year, month, n);
  if (dow === 6) return n === 1 ? 3 : n - 1;
  if (dow === 0) return n === last ? -1 : n + 1;
  return n;
}

function lastWeekday(year: number, month: number): number {
  const last = daysInMonth(year, month);
  const dow = weekdayOf(year, month, last);
  return dow === 6 ? last - 1 : dow === 0 ? last - 2 : last;
}

/** Exact test for a day-of-month field croner cannot express on its own. */
function dayFilterFor(f: DayOfMonthField): (w: WallClock) => boolean {
  return (w) => {
    if (f.days[w.day] === 1) return true;
    const last = daysInMonth(w.year, w.month);
    if (f.last && w.day === last) return true;
    if (f.lastWeekday && w.day === lastWeekday(w.year, w.month)) return true;
    if (f.lastOffset.some((n) => w.day === last - n)) return true;
    return f.nearestWeekday.some((n) => w.day === nearestWeekday(w.year, w.month, n));
  };
}

function setRange(set: ValueSet, from: number, to: number): void {
  for (let d = Math.max(1, from); d <= Math.min(31, to); d++) set[d] = 1;
}

function compileDayOfMonth(f: DayOfMonthField): { part: string; filter: ((w: WallClock) => boolean) | null } {
  if (f.any) return { part: '*', filter: null };
  const plain = ranges(f.days, 1);
  const others = plain !== '' || f.last || f.nearestWeekday.length > 0;
  // From 28W on, day n can be a Sunday ending the month, where croner and Spring differ.
  const croner = f.lastOffset.length === 0 && !(f.lastWeekday && others) && f.nearestWeekday.every((n) => n < 28);
  if (croner) {
    if (f.lastWeekday) return { part: 'LW', filter: null };
    const tokens = [plain, f.last ? 'L' : '', ...f.nearestWeekday.map((n) => `${n}W`)];
    return { part: tokens.filter((t) => t !== '').join(','), filter: null };
  }
  // Every day that may match; the filter picks the right one in each month.
  const candidates = f.days.slice();
  if (f.last) setRange(candidates, 28, 31);
  if (f.lastWeekday) setRange(candidates, 26, 31);
  for (const n of f.nearestWeekday) setRange(candidates, n - 2, n + 2);
  for (const n of f.lastOffset) setRange(candidates, 28 - n, 31 - n);
  return { part: ranges(candidates, 1), filter: dayFilterFor(f) };
}

function compileDayOfWeek(f: CronFields['dayOfWeek']): string {
  if (f.any) return '*';
  const tokens = [ranges(f.days, 0), ...f.nth.map(([d, n]) => `${d}#${n}`), ...f.last.map((d) => `${d}L`)];
  return tokens.filter((t) => t !== '').join(',');
}

/**
 * Whether no day of any month named matches both day fields, in any year: days
 * named that no month has (`0 0 0 31 6 *`), or day fields that never coincide
 * (`0 0 0 5 * 6L`: the last Saturday is never the 5th). croner would search up
 * to the year 3000 to say so, at every call. A month's days depend only on its
 * length and the weekday of its first day, and every such pair occurs.
 */
function neverOccurs(fields: CronFields): boolean {
  const dom = fields.dayOfMonth;
  const dow = fields.dayOfWeek;
  if (dom.any && dow.any) return false;
  for (let m = 1; m <= 12; m++) {
    if (fields.month !== null && fields.month[m] !== 1) continue;
    for (const last of m === 2 ? [28, 29] : [MONTH_DAYS[m - 1] ?? 31]) {
      for (let first = 0; first < 7; first++) {
        const weekday = (day: number): number => (first + day - 1) % 7;
        for (let day = 1; day <= last; day++) {
          if (domMatches(dom, day, last, weekday) && dowMatches(dow, day, last, weekday(day))) return false;
        }
      }
    }
  }
  return true;
}

/** Spring's day-of-month rules for a day of a month of `last` days. */
function domMatches(f: DayOfMonthField, day: number, last: number, weekday: (day: number) => number): boolean {
  if (f.any || f.days[day] === 1) return true;
  if (f.last && day === last) return true;
  if (f.lastWeekday) {
    const wd = weekday(last);
    if (day === (wd === 6 ? last - 1 : wd === 0 ? last - 2 : last)) return true;
  }
  if (f.lastOffset.some((n) => day === last - n)) return true;
  return f.nearestWeekday.some((n) => {
    if (n > last) return false;
    const wd = weekday(n);
    const nearest = wd === 6 ? (n === 1 ? 3 : n - 1) : wd === 0 ? (n === last ? -1 : n + 1) : n;
    return day === nearest;
  });
}

/** Spring's day-of-week rules (`d`, `d#n`, `dL`) for a day that is weekday `wd`. */
function dowMatches(f: DayOfWeekField, day: number, last: number, wd: number): boolean {
  if (f.any || f.days[wd] === 1) return true;
  if (f.nth.some(([d, n]) => d === wd && Math.ceil(day / 7) === n)) return true;
  return f.last.some((d) => d === wd && day + 7 > last);
}

/** The croner pattern for parsed fields. */
export function compile(fields: CronFields): Compiled {
  const dom = compileDayOfMonth(fields.dayOfMonth);
  return {
    parts: [
      ranges(fields.second, 0),
      ranges(fields.minute, 0),
      ranges(fields.hour, 0),
      dom.part,
      fields.month === null ? '*' : ranges(fields.month, 1),
      compileDayOfWeek(fields.dayOfWeek),
    ],
    dayFilter: dom.filter,
    never: neverOccurs(fields),
  };
}
