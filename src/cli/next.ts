/**
 * `leasehold next "<expr>" [--zone Z] [--from ISO] [-n N]`: the next fire times
 * of a cron expression, one ISO-8601 timestamp per line, with the zone's offset
 * at that instant (`2026-03-09T02:30:00-04:00`; UTC prints as `+00:00`).
 * @module
 */
import { parseArgs } from 'node:util';
import { parseCron } from '../cron/index.js';
import { type ResolvedZone, formatInZone, resolveZone, utcMs, zonedToInstant } from '../cron/zone.js';
import { isLeaseholdError, errorMessage } from '../errors.js';
import { systemClock, type Clock } from '../clock.js';
import type { CommandHelp } from './help.js';

/** What the command prints and its exit status. */
export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const DEFAULT_COUNT = 5;
const MAX_COUNT = 10_000;
const USAGE = 'usage: leasehold next "<expr>" [--zone Z] [--from ISO] [-n N]';

/** `leasehold next --help`. */
export const NEXT_HELP: CommandHelp = {
  usage: ['leasehold next "<cron>" [--zone <zone>] [--from <iso>] [-n <count>]'],
  summary: 'Prints the next fire times of a cron expression (six fields, seconds first: sec min hour day-of-month month day-of-week), one ISO-8601 timestamp with the zone\'s offset a line.',
  options: [
    { flag: '--zone <zone>', default: 'UTC', description: 'The zone the expression is read in and the times are printed in: an IANA id (`Europe/Berlin`), a fixed offset (`+02:00`) or `UTC`.' },
    { flag: '--from <iso>', default: 'now', description: 'Print the fire times after this ISO-8601 date-time; without an offset it is a local time in the zone.' },
    { flag: '-n, --count <count>', default: String(DEFAULT_COUNT), description: `How many fire times to print, 1 to ${MAX_COUNT}.` },
  ],
  notes: ['Exit status: 0 with the fire times; 2 with one line naming what is wrong (the field of the expression, the zone, --from or -n).'],
};

/** `2026-03-08`, `2026-03-08T01:30`, `2026-03-08T01:30:00.5`, each with an optional `Z` or `±HH:MM`. */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$/;

class UsageError extends Error {}

function usageError(message: string): never {
  throw new UsageError(message);
}

/**
 * Read `--from`. With an offset or `Z` it is that instant; without, it is a
 * local time in the zone (the first, when the local time happens twice).
 */
function parseFrom(text: string, zone: ResolvedZone): Date {
  const m = ISO.exec(text);
  if (m === null) usageError(`--from ${JSON.stringify(text)} is not an ISO-8601 date-time such as 2026-03-08T01:30:00-05:00`);
  const n = (i: number): number => Number(m[i] ?? 0);
  const w = { year: n(1), month: n(2), day: n(3), hour: n(4), minute: n(5), second: n(6) };
  const check = new Date(utcMs(w.year, w.month, w.day, w.hour, w.minute, w.second));
  if (check.getUTCMonth() + 1 !== w.month || check.getUTCDate() !== w.day || w.hour > 23 || w.minute > 59 || w.second > 59) {
    usageError(`--from ${JSON.stringify(text)} is not a valid date-time`);
  }
  const ms = Math.floor(Number(`0.${m[7] ?? '0'}`) * 1000);
  if (m[8] !== undefined) return new Date(check.getTime() + ms);
  if (m[9] !== undefined) {
    const offset = (n(10) * 60 + n(11)) * 60_000 * (m[9] === '-' ? -1 : 1);
    return new Date(check.getTime() - offset + ms);
  }
  return new Date(zonedToInstant(zone, w) + ms);
}

function parseCount(text: string | undefined): number {
  if (text === undefined) return DEFAULT_COUNT;
  const count = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(count >= 1 && count <= MAX_COUNT)) usageError(`-n ${JSON.stringify(text)} must be a whole number from 1 to ${MAX_COUNT}`);
  return count;
}

function failure(message: string): CommandResult {
  return { code: 2, stdout: '', stderr: `leasehold next: ${message.replace(/\s*\n\s*/g, ' ')}\n` };
}

/**
 * Run `leasehold next`; `argv` excludes the word `next`. Exit code 0 with the
 * fire times on stdout, or 2 with one line on stderr naming what is wrong: the
 * expression (and its field), the zone, `--from`, `-n`, or an unknown option.
 * The clock gives the default `--from` (now).
 */
export function runNext(argv: string[], clock: Pick<Clock, 'now'> = systemClock): CommandResult {
  try {
    let values: { zone?: string | undefined; from?: string | undefined; count?: string | undefined };
    let positionals: string[];
    try {
      ({ values, positionals } = parseArgs({
        args: argv,
        allowPositionals: true,
        strict: true,
        options: { zone: { type: 'string' }, from: { type: 'string' }, count: { type: 'string', short: 'n' } },
      }));
    } catch (err) {
      usageError(`${errorMessage(err)}; ${USAGE}`);
    }
    if (positionals.length === 0) usageError(`missing cron expression; ${USAGE}`);
    if (positionals.length > 1) usageError(`expected one cron expression, got ${positionals.length} arguments (quote the expression); ${USAGE}`);
    const zone = resolveZone(values.zone ?? 'UTC');
    const count = parseCount(values.count);
    const from = values.from === undefined ? new Date(clock.now()) : parseFrom(values.from, zone);
    const schedule = parseCron(positionals[0] ?? '', { zone: zone.id });

    const lines: string[] = [];
    let last = from;
    for (let at = schedule.next(last); at !== null; at = lines.length < count ? schedule.next(last) : null) {
      lines.push(formatInZone(at, zone));
      last = at;
    }
    // An expression that never fires again is valid: say so, but it is not an error.
    const stderr = lines.length < count ? `leasehold next: no ${lines.length === 0 ? '' : 'further '}fire time after ${formatInZone(last, zone)}\n` : '';
    return { code: 0, stdout: lines.map((l) => `${l}\n`).join(''), stderr };
  } catch (err) {
    if (err instanceof UsageError || isLeaseholdError(err)) return failure(err.message);
    throw err;
  }
}
