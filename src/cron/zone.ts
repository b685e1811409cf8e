/**
 * Zones for cron schedules: `UTC`, fixed offsets such as `+02:00`, and IANA ids
 * such as `Europe/Berlin`, checked when given rather than at the first fire.
 * Also the local wall clock of an instant in a zone, which the DST rules need.
 * @module
 */
import { ErrorCodes, leaseholdError, type LeaseholdError } from '../errors.js';
import { remember } from './cache.js';

/** A checked zone: its normalised id, its offset when it is fixed, and its wall clock. */
export interface ResolvedZone {
  /** `UTC`, `+02:00`, or the IANA id as `Intl` resolves it (`Europe/Berlin`). */
  readonly id: string;
  /** Minutes east of UTC for `UTC` and fixed offsets; `null` for an IANA zone. */
  readonly offsetMinutes: number | null;
  /** Fills `out` with the wall clock of instant `ms` in the zone, and returns it. */
  readonly wallClock: Reader;
}

/** Local date and time fields of an instant; month 1-12. */
export interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const OFFSET = /^([+-])(\d{2}):(\d{2})$/;
const MAX_OFFSET_MINUTES = 14 * 60;
const MS_PER_MINUTE = 60_000;

type Reader = (ms: number, out: WallClock) => WallClock;

const UTC: ResolvedZone = fixedZone('UTC', 0);

function invalidZone(zone: unknown, why: string): LeaseholdError {
  const shown = typeof zone === 'string' ? JSON.stringify(zone.slice(0, 80)) : String(zone);
  return leaseholdError(ErrorCodes.invalidZone, { zone: shown, problem: why });
}

/**
 * Check a zone and say how to compute in it. `UTC`, `Z` and offsets `±HH:MM`
 * (up to 14 hours) are fixed; anything else must be an IANA id that `Intl`
 * knows. Throws {@link LeaseholdError} `invalidZone` naming the zone.
 * An IANA zone is checked once (an `Intl.DateTimeFormat` is slow to make)
 * and kept in the cron cache; a zone that fails is not kept.
 */
export function resolveZone(zone: unknown): ResolvedZone {
  if (typeof zone !== 'string' || zone === '') throw invalidZone(zone, 'expected an IANA zone id, a fixed offset such as +02:00, or UTC');
  if (zone === 'Z' || zone.toUpperCase() === 'UTC') return UTC;
  const m = OFFSET.exec(zone);
  if (m !== null) {
    const minutes = Number(m[2]) * 60 + Number(m[3]);
    if (Number(m[3]) > 59 || minutes > MAX_OFFSET_MINUTES) throw invalidZone(zone, 'a fixed offset must lie within -14:00 and +14:00');
    return minutes === 0 ? UTC : fixedZone(zone, m[1] === '-' ? -minutes : minutes);
  }
  return remember(`zone ${zone}`, () => ianaZone(zone));
}

function ianaZone(zone: string): ResolvedZone {
  let f: Intl.DateTimeFormat;
  try {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23',
      year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
    });
  } catch (err) {
    throw leaseholdError(ErrorCodes.invalidZone, { zone: JSON.stringify(zone.slice(0, 80)), problem: 'unknown time zone' }, { cause: err });
  }
  const id = f.resolvedOptions().timeZone;
  return id === 'UTC' ? UTC : { id, offsetMinutes: null, wallClock: formatReader(f) };
}

/**
 * Check a zone for a schedule and return it normalised: `UTC` for `UTC`, `Z`
 * and zero offsets, `±HH:MM` for fixed offsets, the resolved IANA id otherwise.
 * Throws {@link LeaseholdError} `invalidZone` naming the zone; never falls
 * back to UTC.
 */
export function validateZone(zone: string): string {
  return resolveZone(zone).id;
}

/** Epoch ms of a UTC date-time, correct for years 0-99 too (`Date.UTC` maps those to 19xx). */
export function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  if (year >= 100 || year < 0) return Date.UTC(year, month - 1, day, hour, minute, second);
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime();
}

function readParts(parts: Intl.DateTimeFormatPart[], out: WallClock): void {
  for (const p of parts) {
    const v = Number(p.value);
    if (p.type === 'year') out.year = v;
    else if (p.type === 'month') out.month = v;
    else if (p.type === 'day') out.day = v;
    else if (p.type === 'hour') out.hour = v === 24 ? 0 : v;
    else if (p.type === 'minute') out.minute = v;
    else if (p.type === 'second') out.second = v;
  }
}

/** The wall-clock reader of an IANA zone's `Intl.DateTimeFormat`. */
function formatReader(f: Intl.DateTimeFormat): Reader {
  // Read `format` by position when it agrees with `formatToParts` on a probe, else use the parts.
  const probe = Date.UTC(2001, 10, 23, 14, 5, 6);
  const a = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  const b = { ...a };
  readDigits(f.format(probe), a);
  readParts(f.formatToParts(probe), b);
  const fast = Object.keys(a).every((k) => a[k as keyof WallClock] === b[k as keyof WallClock]);
  return fast
    ? (ms, out) => { readDigits(f.format(ms), out); return out; }
    : (ms, out) => { readParts(f.formatToParts(ms), out); return out; };
}

/**
 * Read the numbers of an en-US date-time (`11/23/2001, 14:05:06`) into `out`.
 * `format`, not `formatToParts`: it is the faster of the two (docs/benchmarks.md).
 */
function readDigits(text: string, out: WallClock): void {
  let field = 0;
  let value = 0;
  let inNumber = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) - 48 : -1;
    if (c >= 0 && c <= 9) {
      value = value * 10 + c;
      inNumber = true;
    } else if (inNumber) {
      if (field === 0) out.month = value;
      else if (field === 1) out.day = value;
      else if (field === 2) out.year = value;
      else if (field === 3) out.hour = value === 24 ? 0 : value;
      else if (field === 4) out.minute = value;
      else if (field === 5) out.second = value;
      field++;
      value = 0;
      inNumber = false;
    }
  }
}

/** A zone at a fixed offset from UTC, in minutes east. */
function fixedZone(id: string, offsetMinutes: number): ResolvedZone {
  const offsetMs = offsetMinutes * MS_PER_MINUTE;
  const d = new Date(0);
  const wallClock: Reader = (ms, out) => {
    d.setTime(ms + offsetMs);
    out.year = d.getUTCFullYear();
    out.month = d.getUTCMonth() + 1;
    out.day = d.getUTCDate();
    out.hour = d.getUTCHours();
    out.minute = d.getUTCMinutes();
    out.second = d.getUTCSeconds();
    return out;
  };
  return { id, offsetMinutes, wallClock };
}

function floorSecond(ms: number): number {
  return ms - (((ms % 1000) + 1000) % 1000);
}

/** Offset of the zone at instant `ms`, in ms east of UTC. */
function offsetAt(zone: ResolvedZone, ms: number): number {
  if (zone.offsetMinutes !== null) return zone.offsetMinutes * MS_PER_MINUTE;
  const w = zone.wallClock(ms, { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 });
  return utcMs(w.year, w.month, w.day, w.hour, w.minute, w.second) - floorSecond(ms);
}

/**
 * The instant a local wall-clock time happens in the zone. A time that happens
 * twice gives the first; a time the clocks skip is read with the offset before
 * the skip, which lands after it (02:30 skipped in New York reads as 03:30).
 */
export function zonedToInstant(zone: ResolvedZone, w: WallClock): number {
  const wall = utcMs(w.year, w.month, w.day, w.hour, w.minute, w.second);
  if (zone.offsetMinutes !== null) return wall - zone.offsetMinutes * MS_PER_MINUTE;
  const before = offsetAt(zone, wall - 43_200_000);
  const after = offsetAt(zone, wall + 43_200_000);
  const first = wall - before;
  const second = wall - after;
  const firstOk = offsetAt(zone, first) === before;
  const secondOk = offsetAt(zone, second) === after;
  if (firstOk && secondOk) return Math.min(first, second);
  if (secondOk) return second;
  return first;
}

const pad = (n: number, width = 2): string => String(Math.abs(n)).padStart(width, '0');

/**
 * ISO-8601 text of an instant in a zone, with the zone's offset at that instant:
 * `2026-03-09T02:30:00-04:00`. UTC is written `+00:00`, like every other offset,
 * so all lines of a listing read alike. Milliseconds appear only when not zero.
 */
export function formatInZone(date: Date, zone: string | ResolvedZone): string {
  const z = typeof zone === 'string' ? resolveZone(zone) : zone;
  const ms = date.getTime();
  const w = z.wallClock(ms, { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 });
  const offsetMs = utcMs(w.year, w.month, w.day, w.hour, w.minute, w.second) - floorSecond(ms);
  // Local mean time before standard zones had offsets in seconds, which ISO-8601 cannot write.
  if (offsetMs % MS_PER_MINUTE !== 0) return formatInZone(date, UTC);
  const offsetMinutes = offsetMs / MS_PER_MINUTE;
  const frac = ms - floorSecond(ms);
  const year = w.year < 0 ? `-${pad(w.year, 6)}` : w.year > 9999 ? `+${pad(w.year, 6)}` : pad(w.year, 4);
  return `${year}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`
    + (frac === 0 ? '' : `.${pad(frac, 3)}`)
    + `${offsetMinutes < 0 ? '-' : '+'}${pad(Math.trunc(offsetMinutes / 60))}:${pad(offsetMinutes % 60)}`;
}
