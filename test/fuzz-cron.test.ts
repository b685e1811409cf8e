/**
 * Cron expressions and zones as untrusted input (SPEC 2 and 9), fuzzed with fast-check:
 * - `next()` answers within 50 ms for any valid expression, in every zone that
 *   `Intl.supportedValuesOf('timeZone')` lists, from any date Date can hold; its answer is
 *   null or a whole second strictly after its argument;
 * - day fields that never coincide (`0 0 0 5 * 6L`: the last Saturday is never the 5th) make
 *   a schedule that never fires, answered at once (croner searched up to the year 3000 at
 *   every call, 60-100 ms each);
 * - the fires of day rules agree with an independent reading of Spring's day rules over 28
 *   years (every length and first weekday of every month occurs in them);
 * - mangled expressions, odd zones and odd `after` values throw only LeaseholdErrors whose
 *   message names the field (or the zone) and stays short, however long the input.
 * Seeded, so a failure is reproducible; set FUZZ_SEED to explore other cases.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseCron } from '../src/cron/index.js';
import { isLeaseholdError } from '../src/errors.js';

const SEED = Number(process.env['FUZZ_SEED'] ?? 0xc407);
const params = (numRuns: number): fc.Parameters<unknown> => ({ seed: SEED, numRuns });

/** The bound of one `next()` call. */
const NEXT_BUDGET_MS = 50;
const ZONES = Intl.supportedValuesOf('timeZone');
const FIXED = ['UTC', 'Z', '+00:00', '-00:00', '+05:45', '-12:00', '+14:00', '-09:30'];
const FIELDS = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'];

// ---- valid expressions, every construct of the dialect ------------------------------------

const int = (min: number, max: number): fc.Arbitrary<number> => fc.integer({ min, max });
const bitsItem = (min: number, max: number): fc.Arbitrary<string> => fc.oneof(
  fc.constant('*'),
  int(min, max).map(String),
  fc.tuple(int(min, max), int(min, max)).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
  fc.tuple(fc.oneof(fc.constant('*'), int(min, max).map(String)), int(1, max + 2)).map(([a, n]) => `${a}/${n}`),
  fc.tuple(int(min, max), int(min, max), int(1, max)).map(([a, b, n]) => `${Math.min(a, b)}-${Math.max(a, b)}/${n}`),
);
const list = (item: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.array(item, { minLength: 1, maxLength: 3 }).map((a) => a.join(','));
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const domField = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('*', '?') },
  { weight: 5, arbitrary: list(fc.oneof(
    { weight: 3, arbitrary: bitsItem(1, 31) },
    { weight: 1, arbitrary: fc.constantFrom('L', 'LW', 'l', 'lw') },
    { weight: 1, arbitrary: int(1, 30).map((n) => `L-${n}`) },
    { weight: 1, arbitrary: int(1, 31).map((n) => `${n}W`) },
  )) },
);
const monthField = fc.oneof(
  fc.constant('*'),
  list(bitsItem(1, 12)),
  list(fc.constantFrom(...MONTHS, 'jan', 'Feb', 'JAN-MAR', 'NOV-DEC')),
);
const dowField = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('*', '?') },
  { weight: 5, arbitrary: list(fc.oneof(
    { weight: 3, arbitrary: bitsItem(0, 7) },
    { weight: 1, arbitrary: fc.constantFrom(...DAYS, 'mon', 'MON-FRI', 'SAT-SUN', '7-3') },
    { weight: 1, arbitrary: int(0, 7).map((d) => `${d}L`) },
    { weight: 1, arbitrary: fc.tuple(fc.oneof(int(0, 7).map(String), fc.constantFrom(...DAYS)), int(1, 5)).map(([d, n]) => `${d}#${n}`) },
  )) },
);
const expression: fc.Arbitrary<string> = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom('@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly', '@DAILY') },
  { weight: 12, arbitrary: fc.tuple(list(bitsItem(0, 59)), list(bitsItem(0, 59)), list(bitsItem(0, 23)), domField, monthField, dowField).map((f) => f.join(' ')) },
);
/** Any instant Date can hold, weighted towards the years people schedule in. */
const instant: fc.Arbitrary<Date> = fc.oneof(
  { weight: 4, arbitrary: fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true }) },
  { weight: 2, arbitrary: fc.date({ noInvalidDate: true }) },
  { weight: 1, arbitrary: fc.constantFrom(
    new Date(8.64e15), new Date(-8.64e15), new Date(0), new Date('0001-01-01T00:00:00Z'), new Date('0000-12-31T23:59:59.999Z'),
    new Date('2999-12-31T23:59:59.999Z'), new Date('3000-01-01T00:00:00Z'), new Date('2026-03-08T06:59:59.999Z'), new Date('2026-11-01T05:30:00Z'),
  ) },
);

/** The fastest of up to three calls: one slow call may be a pause of the test process, three are not. */
function timedNext(expr: string, zone: string, after: Date, budget = NEXT_BUDGET_MS): { ms: number; result: Date | null } {
  const schedule = parseCron(expr, { zone });
  let best = Infinity;
  let result: Date | null = null;
  for (let i = 0; i < 3 && best >= budget; i++) {
    const t0 = performance.now();
    result = schedule.next(after);
    best = Math.min(best, performance.now() - t0);
  }
  return { ms: best, result };
}

function assertQuickAndAfter(expr: string, zone: string, after: Date): void {
  const { ms, result } = timedNext(expr, zone, after);
  const where = `${expr} in ${zone} after ${after.toISOString()}`;
  assert.ok(ms < NEXT_BUDGET_MS, `next() took ${ms.toFixed(1)} ms: ${where}`);
  if (result === null) return;
  assert.ok(result instanceof Date && result.getTime() > after.getTime(), `${result.toISOString()} is not after: ${where}`);
  assert.ok(((result.getTime() % 1000) + 1000) % 1000 === 0, `${result.toISOString()} is not a whole second: ${where}`);
  assert.ok(result.getTime() <= 8.64e15, `${String(result)} is past the last instant a Date holds: ${where}`);
}

describe('next() terminates quickly for any valid expression, zone and date', () => {
  test('day fields that never coincide never fire, and say so at once', () => {
    const never = [
      '0 0 0 5 * 6L', // the last Saturday is the 22nd or later
      '*,* *,* 3 5 *,JAN-MAR 6L,3L',
      '0 0 0 L-1 2 1#5', // a fifth Monday in February is the 29th, never L-1
      '0 0 0 1-7 * MON#2',
      '0 0 0 31 4,6,9,11 *',
      '0 0 0 30W 2 *',
      '0 0 0 L-29 2 ?',
    ];
    for (const expr of never) {
      for (const zone of ['UTC', 'Europe/Berlin', '+05:30']) {
        const { ms, result } = timedNext(expr, zone, new Date('2026-05-05T00:00:00Z'), 5);
        assert.equal(result, null, `${expr} fired at ${result?.toISOString() ?? ''}`);
        assert.ok(ms < 5, `${expr} in ${zone}: ${ms.toFixed(1)} ms to find that it never fires`);
      }
    }
    // Rare is not never: Friday the 13th, 29 February on a Monday, the fifth Monday of February.
    const rare: Array<[string, string]> = [
      ['0 0 12 13 * FRI', '2026-02-13T12:00:00.000Z'],
      ['0 0 0 29 2 MON', '2044-02-29T00:00:00.000Z'],
      ['0 0 0 L 2 1#5', '2044-02-29T00:00:00.000Z'],
      ['0 0 0 1-7 * MON#1', '2026-01-05T00:00:00.000Z'],
    ];
    for (const [expr, first] of rare) assert.equal(parseCron(expr).next(new Date('2026-01-01T00:00:00Z'))?.toISOString(), first, expr);
  });

  test('generated expressions, any zone, any date', () => {
    fc.assert(fc.property(expression, fc.oneof(fc.constantFrom(...ZONES), fc.constantFrom(...FIXED)), instant, assertQuickAndAfter), params(2_500));
  });

  test(`every one of the ${ZONES.length} zones`, () => {
    const cases = fc.sample(fc.tuple(expression, instant), { seed: SEED, numRuns: ZONES.length });
    ZONES.forEach((zone, i) => {
      const [expr, after] = cases[i] ?? ['* * * * * *', new Date(0)];
      assertQuickAndAfter(expr, zone, after);
      assertQuickAndAfter('0 30 2 * * *', zone, after);
    });
  });

  test('around daylight-saving changes, where candidates are dropped', () => {
    const nearChange = fc.tuple(fc.integer({ min: 1970, max: 2100 }), fc.constantFrom(2, 3, 4, 9, 10, 11), fc.integer({ min: 0, max: 31 * 24 * 3600 })).map(([y, m, s]) => new Date(Date.UTC(y, m, 1) + s * 1000));
    const dstZones = ['America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'America/Santiago', 'America/Havana', 'Pacific/Chatham', 'Asia/Tehran', 'America/Godthab', 'Africa/Casablanca', 'Pacific/Apia', 'Antarctica/Troll'];
    const gapTimes = fc.tuple(int(0, 59), fc.constantFrom('0', '30', '*/15', '0-59'), fc.constantFrom('0', '1', '2', '3', '23', '1-3', '2/1'), domField, monthField, dowField).map((f) => f.join(' '));
    fc.assert(fc.property(gapTimes, fc.constantFrom(...dstZones.filter((z) => ZONES.includes(z) || z === 'America/Godthab')), nearChange, assertQuickAndAfter), params(800));
  });
});

// ---- an independent reading of Spring's day rules ------------------------------------------

type DomItem = { k: 'n'; n: number } | { k: 'range'; a: number; b: number } | { k: 'L' } | { k: 'LW' } | { k: 'L-'; n: number } | { k: 'W'; n: number };
type DowItem = { k: 'd'; d: number } | { k: 'range'; a: number; b: number } | { k: 'dL'; d: number } | { k: '#'; d: number; n: number };

const domItem: fc.Arbitrary<DomItem> = fc.oneof(
  int(1, 31).map((n) => ({ k: 'n', n }) as const),
  fc.tuple(int(1, 31), int(1, 31)).map(([a, b]) => ({ k: 'range', a: Math.min(a, b), b: Math.max(a, b) }) as const),
  fc.constantFrom<DomItem>({ k: 'L' }, { k: 'LW' }),
  int(1, 30).map((n) => ({ k: 'L-', n }) as const),
  int(1, 31).map((n) => ({ k: 'W', n }) as const),
);
const dowItem: fc.Arbitrary<DowItem> = fc.oneof(
  int(0, 7).map((d) => ({ k: 'd', d }) as const),
  fc.tuple(int(0, 6), int(0, 6)).map(([a, b]) => ({ k: 'range', a: Math.min(a, b), b: Math.max(a, b) }) as const),
  int(0, 7).map((d) => ({ k: 'dL', d }) as const),
  fc.tuple(int(0, 7), int(1, 5)).map(([d, n]) => ({ k: '#', d, n }) as const),
);
const renderDom = (i: DomItem): string => (i.k === 'n' ? `${i.n}` : i.k === 'range' ? `${i.a}-${i.b}` : i.k === 'L-' ? `L-${i.n}` : i.k === 'W' ? `${i.n}W` : i.k);
const renderDow = (i: DowItem): string => (i.k === 'd' ? `${i.d}` : i.k === 'range' ? `${i.a}-${i.b}` : i.k === 'dL' ? `${i.d}L` : `${i.d}#${i.n}`);

function monthDays(y: number, m: number): number {
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}
function weekday(y: number, m: number, d: number): number {
  return new Date(Date.UTC(y, m - 1, d)).getUTCDay();
}
function domHas(i: DomItem, y: number, m: number, d: number): boolean {
  const last = monthDays(y, m);
  switch (i.k) {
    case 'n': return d === i.n;
    case 'range': return d >= i.a && d <= i.b;
    case 'L': return d === last;
    case 'L-': return d === last - i.n;
    case 'LW': {
      let w = last;
      while (weekday(y, m, w) === 0 || weekday(y, m, w) === 6) w--;
      return d === w;
    }
    case 'W': {
      // Spring: the weekday nearest to day n within the month; none when n is a Sunday ending it.
      if (i.n > last) return false;
      const wd = weekday(y, m, i.n);
      const target = wd === 6 ? (i.n === 1 ? 3 : i.n - 1) : wd === 0 ? (i.n === last ? -1 : i.n + 1) : i.n;
      return d === target;
    }
  }
}
function dowHas(i: DowItem, y: number, m: number, d: number): boolean {
  const wd = weekday(y, m, d);
  switch (i.k) {
    case 'd': return wd === i.d % 7;
    case 'range': return wd >= i.a && wd <= i.b;
    case 'dL': return wd === i.d % 7 && d + 7 > monthDays(y, m);
    case '#': return wd === i.d % 7 && Math.ceil(d / 7) === i.n;
  }
}

describe('day rules agree with an independent reading of Spring', () => {
  test('the first fires of 0 0 12 <day-of-month> <month> <day-of-week> over 2001-2028', () => {
    const dom = fc.option(fc.array(domItem, { minLength: 1, maxLength: 2 }), { freq: 4 });
    const dow = fc.option(fc.array(dowItem, { minLength: 1, maxLength: 2 }), { freq: 4 });
    const months = fc.option(fc.uniqueArray(int(1, 12), { minLength: 1, maxLength: 3 }), { freq: 3 });
    fc.assert(fc.property(dom, months, dow, (d, mo, w) => {
      const expr = `0 0 12 ${d === null ? '?' : d.map(renderDom).join(',')} ${mo === null ? '*' : mo.join(',')} ${w === null ? '?' : w.map(renderDow).join(',')}`;
      const expected: string[] = [];
      for (let y = 2001; y <= 2028 && expected.length < 3; y++) {
        for (let m = 1; m <= 12 && expected.length < 3; m++) {
          if (mo !== null && !mo.includes(m)) continue;
          for (let day = 1; day <= monthDays(y, m) && expected.length < 3; day++) {
            if ((d === null || d.some((i) => domHas(i, y, m, day))) && (w === null || w.some((i) => dowHas(i, y, m, day)))) {
              expected.push(new Date(Date.UTC(y, m - 1, day, 12)).toISOString());
            }
          }
        }
      }
      const schedule = parseCron(expr);
      const actual: string[] = [];
      for (let at = schedule.next(new Date('2000-12-31T12:00:00Z')); at !== null && actual.length < expected.length; at = schedule.next(at)) actual.push(at.toISOString());
      if (expected.length === 0) assert.equal(schedule.next(new Date('2000-12-31T12:00:00Z')), null, `${expr} fires, but no day of 2001-2028 matches`);
      assert.deepEqual(actual, expected, expr);
    }), params(400));
  });
});

// ---- bad input --------------------------------------------------------------------------------

const ALPHABET = ['*', '?', '/', '-', ',', '#', 'L', 'W', 'l', ' ', '  ', '\t', '\n', '0', '7', '9', '60', '99999999999999999999', '1e3', '0x1F', '-1', '+1', '.5', 'MON', 'JANUARY', '@', 'é', '٣', '\u0000', '\u200b', '🕐', '%', '\\', '"', '$('];

/** A valid expression with a few characters inserted, deleted or replaced. */
const mangled: fc.Arbitrary<string> = fc.tuple(expression, fc.array(fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'replace'), fc.constantFrom(...ALPHABET)), { minLength: 1, maxLength: 4 }))
  .map(([expr, edits]) => edits.reduce((s, [pos, op, text]) => {
    const i = s.length === 0 ? 0 : pos % s.length;
    return op === 'insert' ? s.slice(0, i) + text + s.slice(i) : op === 'delete' ? s.slice(0, i) + s.slice(i + 1) : s.slice(0, i) + text + s.slice(i + 1);
  }, expr));
const zoneInput: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...ZONES), fc.constantFrom(...FIXED),
  fc.constantFrom('Mars/Olympus', '+14:01', '+99:99', '+2:00', '02:00', 'utc+1', 'GMT+25', 'Europe/', '/', '..', 'Europe/Berlin\u0000', 'EUROPE/BERLIN', 'Etc/GMT-14', 'Etc/GMT+13', ''),
  fc.string({ maxLength: 24 }),
  fc.anything(),
);

/** A value as text for a message; `String()` itself throws for some objects. */
function show(v: unknown): string {
  try {
    return typeof v === 'string' ? JSON.stringify(v.slice(0, 60)) : String(v);
  } catch {
    return `a ${typeof v}`;
  }
}

function onlyLeaseholdErrors(expr: unknown, zone: unknown, after: unknown = new Date('2026-05-05T00:00:00Z')): void {
  let schedule;
  try {
    schedule = parseCron(expr as string, zone === undefined ? {} : { zone: zone as string });
  } catch (err) {
    assert.ok(isLeaseholdError(err), `parseCron(${show(expr)}, ${show(zone)}) threw ${show(err)}`);
    assert.ok(err.message.length <= 600, `a ${err.message.length}-character message`);
    if (err.code === 'invalidCron') {
      const named = FIELDS.some((f) => err.message.includes(`: ${f} field `)) || /six fields|macro|empty|expected a string/.test(err.message);
      assert.ok(named, `names no field: ${err.message}`);
    } else {
      assert.equal(err.code, 'invalidZone', err.message);
      assert.match(err.message, /^Invalid zone /);
    }
    return;
  }
  try {
    const t0 = performance.now();
    const next = schedule.next(after as Date);
    assert.ok(next === null || next instanceof Date);
    assert.ok(performance.now() - t0 < 250, 'next() over a mangled expression took long');
  } catch (err) {
    assert.ok(isLeaseholdError(err, 'invalidState'), `next(${show(after)}) threw ${show(err)}`);
  }
}

describe('bad expressions, zones and dates throw only LeaseholdErrors that name what is wrong', () => {
  test('valid expressions with characters inserted, deleted or replaced', () => {
    fc.assert(fc.property(mangled, fc.option(zoneInput, { nil: undefined, freq: 3 }), (e, z) => onlyLeaseholdErrors(e, z)), params(4_000));
  });

  test('any value as the expression, the zone or the instant', () => {
    fc.assert(fc.property(fc.oneof(expression, fc.anything()), zoneInput, fc.oneof(instant, fc.anything(), fc.constant(new Date(Number.NaN))), onlyLeaseholdErrors), params(1_500));
  });

  test('huge input is parsed or refused quickly, with a short message', () => {
    const huge = [
      `${'0,'.repeat(50_000)}0 * * * * *`,
      `* * * * * ${'MON,'.repeat(20_000)}MON`,
      `${'9'.repeat(100_000)} * * * * *`,
      `0 0 0 ${'L-'.repeat(10_000)}1 * *`,
      `${'* '.repeat(50_000)}`,
      `0 0 0 1 1 ${'1#'.repeat(10_000)}1`,
      ' '.repeat(100_000),
    ];
    for (const expr of huge) {
      const t0 = performance.now();
      onlyLeaseholdErrors(expr, 'Europe/Berlin');
      assert.ok(performance.now() - t0 < 500, `${expr.slice(0, 20)}...: ${(performance.now() - t0).toFixed(0)} ms`);
    }
    assert.throws(() => parseCron(`${'9'.repeat(100_000)} * * * * *`), (e: unknown) => isLeaseholdError(e, 'invalidCron') && e.message.length < 600 && e.message.includes('second field'));
  });
});
