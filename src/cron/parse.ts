/**
 * `parseCron`: Spring's six-field cron dialect, checked field by field, in a zone.
 * @module
 */
import { Cron } from 'croner';
import { ErrorCodes, LeaseholdError, errorMessage, leaseholdError } from '../errors.js';
import { remember } from './cache.js';
import { compile } from './compile.js';
import { FIELD_NAMES, fieldError, parseFields, quote } from './fields.js';
import { type CronSchedule, createSchedule, cronerOptions } from './schedule.js';
import { type ResolvedZone, resolveZone } from './zone.js';

/** Options of {@link parseCron}. */
export interface ParseCronOptions {
  /** IANA zone id, fixed offset (`+02:00`) or `UTC`; default `UTC`, whatever the server's zone. */
  readonly zone?: string;
}

/** Spring's macros, by their six-field meaning. */
const MACROS: ReadonlyMap<string, string> = new Map([
  ['@yearly', '0 0 0 1 1 *'],
  ['@annually', '0 0 0 1 1 *'],
  ['@monthly', '0 0 0 1 * *'],
  ['@weekly', '0 0 0 * * 0'],
  ['@daily', '0 0 0 * * *'],
  ['@midnight', '0 0 0 * * *'],
  ['@hourly', '0 0 * * * *'],
]);

type SixParts = [string, string, string, string, string, string];

function invalid(expression: string, why: string): LeaseholdError {
  return leaseholdError(ErrorCodes.invalidCron, { expression: quote(expression), problem: why });
}

function isSix(parts: string[]): parts is SixParts {
  return parts.length === 6;
}

/** A day field that restricts the days: not `*` nor `?`. */
const restricts = (field: string | undefined): boolean => field !== undefined && field !== '*' && field !== '?';

/**
 * What is wrong with an expression that has not six fields, with the fix for a five-field
 * (Unix) one: its six-field form, seconds first, when that form is valid.
 */
function fieldCountProblem(parts: readonly string[], zone: ResolvedZone): string {
  const problem = `expected six fields (second minute hour day-of-month month day-of-week), got ${parts.length}`;
  if (parts.length !== 5) return problem;
  const six = ['0', ...parts].join(' ');
  try {
    build(six, zone);
  } catch (err) {
    if (!(err instanceof LeaseholdError)) throw err;
    return `${problem}; a five-field (Unix) cron has no seconds field: add one first (seconds first)`;
  }
  // Unix cron runs a day matching either restricted day field; Spring's rule, both (SPEC 2).
  const both = restricts(parts[2]) && restricts(parts[4]) ? '; note that here a day must match both day fields, where Unix cron takes either' : '';
  return `${problem}; a five-field (Unix) cron has no seconds field: use ${quote(six)} (seconds first)${both}`;
}

/**
 * croner rejected a pattern that passed our own checks. Find the field by
 * building each field alone, the others `*`, so the message still names it.
 */
function cronerError(expression: string, userParts: SixParts, cronerParts: readonly string[], zone: ResolvedZone, err: unknown): LeaseholdError {
  const reason = errorMessage(err);
  for (let i = 0; i < 6; i++) {
    const alone = cronerParts.map((p, j) => (j === i ? p : j === 0 ? '0' : '*')).join(' ');
    try {
      new Cron(alone, cronerOptions(zone));
    } catch {
      const e = fieldError(expression, FIELD_NAMES[i] ?? 'second', userParts[i] ?? '', reason);
      return new LeaseholdError(e.code, e.message, { cause: err });
    }
  }
  return leaseholdError(ErrorCodes.invalidCron, { expression: quote(expression), problem: reason }, { cause: err });
}

/**
 * Parse a cron expression in Spring's dialect: six fields, seconds first
 * (`sec min hour day-of-month month day-of-week`), or a macro (`@hourly`,
 * `@daily`/`@midnight`, `@weekly`, `@monthly`, `@yearly`/`@annually`).
 *
 * When both day fields are restricted a day must match both (`0 0 12 13 * FRI`
 * is Friday the 13th only). In a zone with daylight saving, a local time the
 * clocks skip does not run that day, and a local time that happens twice runs
 * once, at its first occurrence.
 *
 * @throws {@link LeaseholdError} `invalidCron` naming the field at fault
 *   (`second`, `minute`, `hour`, `day-of-month`, `month`, `day-of-week`), or
 *   `invalidZone` naming the zone.
 */
export function parseCron(expr: string, opts: ParseCronOptions = {}): CronSchedule {
  if (typeof expr !== 'string') {
    throw new LeaseholdError(ErrorCodes.invalidCron, `Invalid cron expression: expected a string, got ${expr === null ? 'null' : typeof expr}`);
  }
  const expression = expr.trim();
  if (expression === '') throw new LeaseholdError(ErrorCodes.invalidCron, 'Invalid cron expression: it is empty');
  // A schedule is immutable, so one instance serves every caller (kept in the cron cache), found
  // by the zone as given and made once per zone as resolved (`europe/berlin` is `Europe/Berlin`).
  const zoneText = typeof opts?.zone === 'string' ? opts.zone : resolveZone(opts?.zone ?? 'UTC').id;
  return remember(`cron ${zoneText}\n${expression}`, () => {
    const zone = resolveZone(zoneText);
    return remember(`cron ${zone.id}\n${expression}`, () => build(expression, zone));
  });
}

function build(expression: string, zone: ResolvedZone): CronSchedule {
  let body = expression;
  if (expression.startsWith('@')) {
    const macro = MACROS.get(expression.toLowerCase());
    if (macro === undefined) throw invalid(expression, `unknown macro; expected one of ${[...MACROS.keys()].join(', ')}`);
    body = macro;
  }
  const parts = body.split(/\s+/);
  if (!isSix(parts)) {
    throw invalid(expression, fieldCountProblem(parts, zone));
  }
  const fields = parseFields(parts, expression);
  const compiled = compile(fields);
  let cron: Cron;
  try {
    cron = new Cron(compiled.parts.join(' '), cronerOptions(zone));
  } catch (err) {
    throw cronerError(expression, parts, compiled.parts, zone, err);
  }
  return createSchedule(expression, zone, fields, compiled, cron);
}
