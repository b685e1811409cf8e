/**
 * Words for what the page shows: a schedule in words ("at 08:00, Monday to Friday,
 * Europe/Berlin"), durations, countdowns and times. Pure functions (no DOM), so they are
 * tested in Node. The cron words follow leasehold's dialect (Spring's six fields, seconds
 * first): when both day fields are restricted a day must match both, and the words say so.
 * @module
 */
import type { ScheduleStatus } from './types.js';

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
};
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'] as const;
const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth'];

const NUM = /^\d{1,2}$/;
const pad = (n: number): string => String(n).padStart(2, '0');
const any = (f: string): boolean => f === '*' || f === '?';

/** "a, b and c". */
function list(items: readonly string[], last = 'and'): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} ${last} ${items[items.length - 1] ?? ''}`;
}

function clock(h: number, m: number, s: number): string {
  return s === 0 ? `${pad(h)}:${pad(m)}` : `${pad(h)}:${pad(m)}:${pad(s)}`;
}

function plural(n: number, one: string, many: string): string {
  return n === 1 ? one : `${n} ${many}`;
}

/** A field in words when it is neither a number nor `*`: "0 and 30", "10 to 20", "every 5 from 0". */
function fieldWords(field: string, name: (v: string) => string | null = (v) => (NUM.test(v) ? String(Number(v)) : null)): string | null {
  const parts: string[] = [];
  for (const part of field.split(',')) {
    const step = /^(\*|[^/]+)\/(\d+)$/.exec(part);
    if (step) {
      const [, from = '*', by = ''] = step;
      const range = from === '*' ? '' : from.includes('-') ? rangeWords(from, name) : `${name(from) ?? ''} on`;
      if (range === null || range === ' on') return null;
      parts.push(`every ${by}${range ? ` (${range})` : ''}`);
      continue;
    }
    if (part.includes('-')) {
      const r = rangeWords(part, name);
      if (r === null) return null;
      parts.push(r);
      continue;
    }
    const v = name(part);
    if (v === null) return null;
    parts.push(v);
  }
  return list(parts);
}

function rangeWords(part: string, name: (v: string) => string | null): string | null {
  const [a = '', b = ''] = part.split('-');
  const x = name(a);
  const y = name(b);
  return x === null || y === null ? null : `${x} to ${y}`;
}

function dayName(v: string): string | null {
  const up = v.toUpperCase();
  const i = NUM.test(v) ? Number(v) % 7 : DAY_NAMES.indexOf(up);
  return i >= 0 && i < 7 && (!NUM.test(v) || Number(v) <= 7) ? (DAYS[i] ?? null) : null;
}

function monthName(v: string): string | null {
  const i = NUM.test(v) ? Number(v) - 1 : MONTH_NAMES.indexOf(v.toUpperCase());
  return i >= 0 && i < 12 ? (MONTHS[i] ?? null) : null;
}

/** The time of day: seconds, minutes and hours. */
function timeWords(sec: string, min: string, hour: string): string | null {
  const s = NUM.test(sec) ? Number(sec) : null;
  const m = NUM.test(min) ? Number(min) : null;
  const hourList = hour.split(',');
  if (s !== null && m !== null) {
    if (hourList.every((h) => NUM.test(h))) return `at ${list(hourList.map((h) => clock(Number(h), m, s)))}`;
    const range = /^(\d{1,2})-(\d{1,2})$/.exec(hour);
    if (range) return `every hour from ${clock(Number(range[1]), m, s)} to ${clock(Number(range[2]), m, s)}`;
    const step = /^(\*|\d{1,2})\/(\d+)$/.exec(hour);
    const at = s === 0 ? `:${pad(m)}` : `:${pad(m)}:${pad(s)}`;
    if (step) return `every ${plural(Number(step[2]), 'hour', 'hours')} at ${at}${step[1] === '*' || step[1] === '0' ? '' : ` from ${clock(Number(step[1]), m, s)}`}`;
    if (hour === '*') return `every hour at ${at}`;
  }
  if (s !== null && hour === '*') {
    const atSec = s === 0 ? '' : ` at :${pad(s)}`;
    if (min === '*') return `every minute${atSec}`;
    const step = /^\*\/(\d+)$/.exec(min);
    if (step) return `every ${plural(Number(step[1]), 'minute', 'minutes')}${atSec}`;
  }
  if (min === '*' && hour === '*') {
    if (sec === '*') return 'every second';
    const step = /^\*\/(\d+)$/.exec(sec);
    if (step) return `every ${plural(Number(step[1]), 'second', 'seconds')}`;
  }
  // Anything else, field by field.
  const words: string[] = [];
  for (const [field, one, many] of [[sec, 'second', 'seconds'], [min, 'minute', 'minutes'], [hour, 'hour', 'hours']] as const) {
    if (field === '*' || (one === 'second' && field === '0')) continue;
    const w = fieldWords(field);
    if (w === null) return null;
    words.push(`${NUM.test(field) ? one : many} ${w}`);
  }
  return words.length === 0 ? 'every second' : `at ${words.join(', ')}`;
}

/** Day of week in words, or null when not understood. */
function weekdayWords(dow: string): { text: string; condition: string } | null {
  const last = /^(\w+)L$/i.exec(dow);
  if (last?.[1]) {
    const d = dayName(last[1]);
    return d === null ? null : { text: `on the last ${d} of the month`, condition: `the last ${d} of the month` };
  }
  const nth = /^(\w+)#([1-5])$/.exec(dow);
  if (nth?.[1]) {
    const d = dayName(nth[1]);
    const o = ORDINALS[Number(nth[2]) - 1];
    return d === null || !o ? null : { text: `on the ${o} ${d} of the month`, condition: `the ${o} ${d} of the month` };
  }
  const single = dayName(dow);
  if (single !== null) return { text: `on ${single}`, condition: `a ${single}` };
  const range = /^(\w+)-(\w+)$/.exec(dow);
  if (range?.[1] && range[2]) {
    const a = dayName(range[1]);
    const b = dayName(range[2]);
    return a === null || b === null ? null : { text: `${a} to ${b}`, condition: `${a} to ${b}` };
  }
  if (dow.split(',').every((d) => dayName(d) !== null)) {
    const names = dow.split(',').map((d) => dayName(d) as string);
    return { text: `on ${list(names)}`, condition: list(names, 'or') };
  }
  const w = fieldWords(dow, dayName);
  return w === null ? null : { text: `on ${w}`, condition: w };
}

/** Day of month in words, or null when not understood. */
function monthdayWords(dom: string): string | null {
  const up = dom.toUpperCase();
  if (up === 'L') return 'on the last day of the month';
  if (up === 'LW') return 'on the last weekday of the month';
  const before = /^L-(\d{1,2})$/.exec(up);
  if (before) return `${plural(Number(before[1]), 'a day', 'days')} before the last day of the month`;
  const weekday = /^(\d{1,2})W$/.exec(up);
  if (weekday) return `on the weekday nearest day ${Number(weekday[1])} of the month`;
  if (NUM.test(dom)) return `on day ${Number(dom)} of the month`;
  const w = fieldWords(dom);
  return w === null ? null : `on days ${w} of the month`;
}

function monthWords(mon: string): string | null {
  if (any(mon)) return '';
  const single = monthName(mon);
  if (single !== null) return `in ${single}`;
  const step = /^\*\/(\d+)$/.exec(mon);
  if (step) return `every ${plural(Number(step[1]), 'month', 'months')}`;
  const w = fieldWords(mon, monthName);
  return w === null ? null : `in ${w}`;
}

/**
 * A six-field cron expression in words, with its zone: `0 0 8 * * MON-FRI` in Europe/Berlin is
 * "at 08:00, Monday to Friday, Europe/Berlin". Null when the expression is beyond these words
 * (the page then shows the expression alone).
 */
export function cronWords(expression: string, zone: string | null): string | null {
  const text = MACROS[expression.trim().toLowerCase()] ?? expression.trim();
  const fields = text.split(/\s+/);
  if (fields.length !== 6) return null;
  const [sec = '', min = '', hour = '', dom = '', mon = '', dow = ''] = fields;
  const time = timeWords(sec, min, hour);
  if (time === null) return null;
  let days: string;
  if (any(dom) && any(dow)) {
    days = time.startsWith('at ') ? 'every day' : '';
  } else if (any(dom)) {
    const w = weekdayWords(dow);
    if (w === null) return null;
    days = w.text;
  } else {
    const d = monthdayWords(dom);
    if (d === null) return null;
    if (any(dow)) days = d;
    else {
      // Spring's rule: a day must match both fields.
      const w = weekdayWords(dow);
      if (w === null) return null;
      days = `${d}, if it is ${w.condition}`;
    }
  }
  const months = monthWords(mon);
  if (months === null) return null;
  return [time, days, months, zone || 'UTC'].filter((p) => p !== '').join(', ');
}

/** A job's schedule in words; null when unknown or beyond words. */
export function scheduleWords(schedule: ScheduleStatus): string | null {
  if (schedule.kind === 'cron') return schedule.expression ? cronWords(schedule.expression, schedule.zone) : null;
  const every = schedule.intervalMs === null ? schedule.expression : duration(schedule.intervalMs);
  if (every === null) return null;
  return schedule.kind === 'fixedRate' ? `every ${every}` : schedule.kind === 'fixedDelay' ? `${every} after each run ends` : null;
}

/** A duration for people: `312 ms`, `4.2 s`, `3 min 5 s`, `2 h 5 min`, `3 d 4 h`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  const neg = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  if (a < 1_000) return `${neg}${Math.round(a)} ms`;
  if (a < 60_000) {
    const s = a / 1_000;
    return `${neg}${s < 10 ? String(Math.round(s * 10) / 10) : String(Math.round(s))} s`;
  }
  const total = Math.round(a / 1_000);
  const d = Math.floor(total / 86_400);
  const h = Math.floor((total % 86_400) / 3_600);
  const m = Math.floor((total % 3_600) / 60);
  const s = total % 60;
  if (d > 0) return `${neg}${d} d${h ? ` ${h} h` : ''}`;
  if (h > 0) return `${neg}${h} h${m ? ` ${m} min` : ''}`;
  return `${neg}${m} min${s ? ` ${s} s` : ''}`;
}

/** How long until `dueMs` (or since, when past), seen at `nowMs`: "in 4 s", "due now", "3 s overdue". */
export function countdown(dueMs: number, nowMs: number): string {
  const left = dueMs - nowMs;
  if (Math.abs(left) < 1_000) return 'due now';
  const whole = Math.ceil(Math.abs(left) / 1_000) * 1_000;
  return left > 0 ? `in ${duration(whole)}` : `${duration(whole)} overdue`;
}

/** How long ago `atMs` was, seen at `nowMs`: "3 s ago", "2 h 5 min ago", or "just now". */
export function ago(atMs: number, nowMs: number): string {
  const past = nowMs - atMs;
  if (past < 1_000) return past > -1_000 ? 'just now' : `in ${duration(-past)}`;
  return `${duration(Math.floor(past / 1_000) * 1_000)} ago`;
}
