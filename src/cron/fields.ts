/**
 * The six fields of Spring's cron dialect, parsed into explicit value sets.
 *
 * Spring's rules, as its `CronExpression`, `BitsCronField` and `QuartzCronField`
 * have them: `*` is "first-last" of the field (1-7, Monday to Sunday, for the
 * day of week); `?` stands for `*` in the two day fields only; `a/n` runs from
 * `a` to the field's maximum; a range runs upwards only; 0 and 7 are Sunday, and
 * 7 as the start of a range means 0. Names (`JAN`, `MON`) are case-insensitive.
 * @module
 */
import { ErrorCodes, leaseholdError, type LeaseholdError } from '../errors.js';

/** The fields of an expression, in order, by the names errors use. */
export const FIELD_NAMES = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;

/** The name of one field of a cron expression. */
export type FieldName = (typeof FIELD_NAMES)[number];

/** Allowed values of a field: `set[v] === 1` when `v` is allowed. */
export type ValueSet = Uint8Array;

/** The day-of-month field. `days` is indexed 1-31. */
export interface DayOfMonthField {
  readonly any: boolean;
  readonly days: ValueSet;
  /** `L`: the last day of the month. */
  readonly last: boolean;
  /** `LW`: the last weekday (Monday to Friday) of the month. */
  readonly lastWeekday: boolean;
  /** `nW`: the weekday nearest to day n, within the month. */
  readonly nearestWeekday: readonly number[];
  /** `L-n`: the n-th to last day of the month. */
  readonly lastOffset: readonly number[];
}

/** The day-of-week field, numbered 0 (Sunday) to 6 (Saturday). */
export interface DayOfWeekField {
  readonly any: boolean;
  readonly days: ValueSet;
  /** `d#n`: the n-th weekday d of the month. */
  readonly nth: ReadonlyArray<readonly [day: number, ordinal: number]>;
  /** `dL`: the last weekday d of the month. */
  readonly last: readonly number[];
}

/** All six fields of one expression. A `null` month means any month. */
export interface CronFields {
  readonly second: ValueSet;
  readonly minute: ValueSet;
  readonly hour: ValueSet;
  readonly dayOfMonth: DayOfMonthField;
  readonly month: ValueSet | null;
  readonly dayOfWeek: DayOfWeekField;
}

interface Bounds {
  readonly name: FieldName;
  readonly min: number;
  readonly max: number;
  /** Where `*` starts: 1 for the day of week (Monday), else `min`. */
  readonly starMin: number;
}

const SECOND: Bounds = { name: 'second', min: 0, max: 59, starMin: 0 };
const MINUTE: Bounds = { name: 'minute', min: 0, max: 59, starMin: 0 };
const HOUR: Bounds = { name: 'hour', min: 0, max: 23, starMin: 0 };
const DAY_OF_MONTH: Bounds = { name: 'day-of-month', min: 1, max: 31, starMin: 1 };
const MONTH: Bounds = { name: 'month', min: 1, max: 12, starMin: 1 };
const DAY_OF_WEEK: Bounds = { name: 'day-of-week', min: 0, max: 7, starMin: 1 };

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];

/** `*`, `a`, `a-b`, each optionally followed by `/n`. */
const BITS_ITEM = /^(?:(\*)|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/;

/** Where a field failed: thrown by the parsers, turned into a message by {@link parseFields}. */
class FieldProblem {
  constructor(readonly reason: string) {}
}

function problem(reason: string): never {
  throw new FieldProblem(reason);
}

function inBounds(text: string, b: Bounds): number {
  const v = Number(text);
  if (v < b.min || v > b.max) problem(`${text} is out of range ${b.min}-${b.max}`);
  return v;
}

/** Parse one comma-separated item of Spring's `BitsCronField` grammar into `set`. */
function parseBitsItem(item: string, b: Bounds, set: ValueSet): void {
  const m = BITS_ITEM.exec(item);
  if (m === null) problem(`"${item}" is not a value, a range a-b or a step */n, a/n, a-b/n`);
  const [, star, from, to, step] = m;
  let lo: number;
  let hi: number;
  if (star !== undefined) {
    lo = b.starMin;
    hi = b.max;
  } else {
    lo = inBounds(from ?? '', b);
    if (to !== undefined) {
      hi = inBounds(to, b);
      if (b === DAY_OF_WEEK && lo === 7) lo = 0; // Sunday starting a range is 0, as in Spring
      if (lo > hi) problem(`range ${item} runs backwards`);
    } else {
      hi = step !== undefined ? b.max : lo;
    }
  }
  const delta = step === undefined ? 1 : Number(step);
  if (!(delta >= 1)) problem(`step in ${item} must be 1 or more`);
  for (let v = lo; v <= hi; v += delta) set[v] = 1;
}

function splitList(field: string): string[] {
  const items = field.split(',');
  if (items.some((i) => i === '')) problem('empty item in list');
  return items;
}

function parseBits(field: string, b: Bounds): ValueSet {
  if (field.includes('?')) problem('? is only allowed in day-of-month and day-of-week');
  const set = new Uint8Array(b.max + 1);
  for (const item of splitList(field)) parseBitsItem(item, b, set);
  return set;
}

function replaceNames(field: string, names: readonly string[]): string {
  let out = field.toUpperCase();
  names.forEach((name, i) => {
    out = out.replaceAll(name, String(i + 1));
  });
  return out;
}

function parseDayOfMonth(raw: string): DayOfMonthField {
  const field = raw.toUpperCase();
  const days = new Uint8Array(32);
  if (field === '*' || field === '?') {
    days.fill(1, 1);
    return { any: true, days, last: false, lastWeekday: false, nearestWeekday: [], lastOffset: [] };
  }
  let last = false;
  let lastWeekday = false;
  const nearestWeekday: number[] = [];
  const lastOffset: number[] = [];
  for (const item of splitList(field)) {
    let m: RegExpExecArray | null;
    if (item === 'L') last = true;
    else if (item === 'LW') lastWeekday = true;
    else if ((m = /^L-(\d+)$/.exec(item)) !== null) {
      const n = Number(m[1]);
      if (n < 1 || n > 30) problem(`offset in ${item} must be 1-30`);
      lastOffset.push(n);
    } else if ((m = /^(\d+)W$/.exec(item)) !== null) {
      nearestWeekday.push(inBounds(m[1] ?? '', DAY_OF_MONTH));
    } else if (/[LW]/.test(item)) {
      problem(`"${item}" is not L, L-n, LW or nW`);
    } else {
      parseBitsItem(item, DAY_OF_MONTH, days);
    }
  }
  return { any: false, days, last, lastWeekday, nearestWeekday, lastOffset };
}

/** A single day of week for `dL` and `d#n`: 0-7, where 0 and 7 are Sunday. */
function weekday(text: string): number {
  return inBounds(text, DAY_OF_WEEK) % 7;
}

function parseDayOfWeek(raw: string): DayOfWeekField {
  const days = new Uint8Array(7);
  if (raw === '*' || raw === '?') {
    days.fill(1);
    return { any: true, days, nth: [], last: [] };
  }
  const field = replaceNames(raw, DAY_NAMES);
  const bits = new Uint8Array(8);
  const nth: Array<readonly [number, number]> = [];
  const last: number[] = [];
  for (const item of splitList(field)) {
    let m: RegExpExecArray | null;
    if ((m = /^(\d+)L$/.exec(item)) !== null) {
      last.push(weekday(m[1] ?? ''));
    } else if ((m = /^(\d+)#(\d+)$/.exec(item)) !== null) {
      const ordinal = Number(m[2]);
      if (ordinal < 1 || ordinal > 5) problem(`ordinal in ${item} must be 1-5`);
      nth.push([weekday(m[1] ?? ''), ordinal]);
    } else if (/[L#]/.test(item)) {
      problem(`"${item}" is not dL or d#n`);
    } else {
      parseBitsItem(item, DAY_OF_WEEK, bits);
    }
  }
  for (let d = 0; d < 7; d++) days[d] = bits[d] ?? 0;
  if (bits[7] === 1) days[0] = 1;
  return { any: false, days, nth, last };
}

function parseMonth(raw: string): ValueSet | null {
  return raw === '*' ? null : parseBits(replaceNames(raw, MONTH_NAMES), MONTH);
}

/**
 * Parse the six fields of an expression. Throws a {@link LeaseholdError}
 * `invalidCron` naming the first field at fault, its text and the reason.
 */
export function parseFields(parts: readonly [string, string, string, string, string, string], expression: string): CronFields {
  let index = 0;
  try {
    const second = parseBits(parts[0], SECOND);
    index = 1;
    const minute = parseBits(parts[1], MINUTE);
    index = 2;
    const hour = parseBits(parts[2], HOUR);
    index = 3;
    const dayOfMonth = parseDayOfMonth(parts[3]);
    index = 4;
    const month = parseMonth(parts[4]);
    index = 5;
    const dayOfWeek = parseDayOfWeek(parts[5]);
    return { second, minute, hour, dayOfMonth, month, dayOfWeek };
  } catch (err) {
    if (!(err instanceof FieldProblem)) throw err;
    throw fieldError(expression, FIELD_NAMES[index] ?? 'second', parts[index] ?? '', err.reason);
  }
}

/** The error for a field at fault: names the field, its text and why. */
export function fieldError(expression: string, field: FieldName, text: string, reason: string): LeaseholdError {
  // The reason may quote an item of the field, as long as the field itself.
  const why = reason.length > 160 ? `${reason.slice(0, 157)}...` : reason;
  return leaseholdError(ErrorCodes.invalidCron, { expression: quote(expression), problem: `${field} field ${quote(text)}: ${why}` });
}

/** Quote user input for a message, shortened so a huge input cannot flood a log. */
export function quote(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 117)}...` : text);
}
