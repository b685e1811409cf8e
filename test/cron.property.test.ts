/**
 * Properties of `parseCron(...).next(after)` over generated Spring expressions,
 * zones and instants. Each expression is generated with its meaning, and the
 * meaning is checked independently: local wall-clock fields come from
 * `Intl.DateTimeFormat#formatToParts` (fixed offsets by arithmetic), and each
 * field is tested against the generated items, not against the parser.
 * - next() terminates quickly, is strictly after its argument, on a whole second;
 * - its result matches every field and is the first occurrence of its local time;
 * - no valid local time between the argument and the result (within 3 hours) is missed;
 * - consecutive fires of a day rule at noon are exactly the matching days;
 * - for any input, parseCron throws nothing but a LeaseholdError.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseCron } from '../src/cron/index.js';
import { cronTrigger } from '../src/schedule/trigger.js';
import { isLeaseholdError } from '../src/errors.js';

type Item =
  | { readonly k: 'star' }
  | { readonly k: 'value'; readonly v: number }
  | { readonly k: 'range'; readonly a: number; readonly b: number }
  | { readonly k: 'step'; readonly from: number | 'star' | readonly [number, number]; readonly n: number }
  | { readonly k: 'L' } | { readonly k: 'LW' } | { readonly k: 'Ln'; readonly n: number } | { readonly k: 'W'; readonly n: number }
  | { readonly k: 'dL'; readonly d: number } | { readonly k: 'nth'; readonly d: number; readonly n: number };

interface Spec { readonly min: number; readonly max: number; readonly starMin: number; readonly dow?: boolean }
const SEC: Spec = { min: 0, max: 59, starMin: 0 };
const HOUR: Spec = { min: 0, max: 23, starMin: 0 };
const DOM: Spec = { min: 1, max: 31, starMin: 1 };
const MONTH: Spec = { min: 1, max: 12, starMin: 1 };
const DOW: Spec = { min: 0, max: 7, starMin: 1, dow: true };
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];

/** A field: `null` is `*` (or `?` in the day fields), else a comma list. */
type Field = readonly Item[] | null;

function numItem(s: Spec): fc.Arbitrary<Item> {
  const int = fc.integer({ min: s.min, max: s.max });
  const sorted = fc.tuple(int, int).map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const);
  const ranges = s.dow ? fc.oneof(sorted, fc.tuple(fc.constant(7), fc.integer({ min: 0, max: 7 }))) : sorted;
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant({ k: 'star' } as const) },
    { weight: 5, arbitrary: int.map((v) => ({ k: 'value', v }) as const) },
    { weight: 2, arbitrary: ranges.map(([a, b]) => ({ k: 'range', a, b }) as const) },
    { weight: 2, arbitrary: fc.record({ from: fc.oneof(fc.constant('star' as const), int, ranges), n: fc.integer({ min: 1, max: s.max + 3 }) }).map((r) => ({ k: 'step', ...r }) as const) },
  );
}

const domItem: fc.Arbitrary<Item> = fc.oneof(
  { weight: 4, arbitrary: numItem(DOM) },
  { weight: 1, arbitrary: fc.constantFrom<Item>({ k: 'L' }, { k: 'LW' }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }).map((n) => ({ k: 'Ln', n }) as const) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 31 }).map((n) => ({ k: 'W', n }) as const) },
);
const dowItem: fc.Arbitrary<Item> = fc.oneof(
  { weight: 4, arbitrary: numItem(DOW) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 7 }).map((d) => ({ k: 'dL', d }) as const) },
  { weight: 1, arbitrary: fc.record({ d: fc.integer({ min: 0, max: 7 }), n: fc.integer({ min: 1, max: 5 }) }).map((r) => ({ k: 'nth', ...r }) as const) },
);

function field(item: fc.Arbitrary<Item>, starWeight: number): fc.Arbitrary<Field> {
  return fc.oneof({ weight: starWeight, arbitrary: fc.constant(null) }, { weight: 3, arbitrary: fc.array(item, { minLength: 1, maxLength: 3 }) });
}

const expression = fc.record({
  second: field(numItem(SEC), 2), minute: field(numItem(SEC), 2), hour: field(numItem(HOUR), 2),
  dom: field(domItem, 5), month: field(numItem(MONTH), 5), dow: field(dowItem, 5),
  names: fc.boolean(), lower: fc.boolean(), question: fc.boolean(),
});
type Expr = typeof expression extends fc.Arbitrary<infer T> ? T : never;

function renderNumber(v: number, names: readonly string[] | null, e: Expr): string {
  // 0 is never written SUN: as a/n, SUN means 7 (`SUN/2` is Sunday only), unlike `0/2`.
  if (names === null || !e.names || (names === DAYS && v === 0)) return String(v);
  const name = names === DAYS ? DAYS[v] : MONTHS[v - 1];
  return e.lower ? (name ?? '').toLowerCase() : (name ?? '');
}

function renderItem(i: Item, names: readonly string[] | null, e: Expr): string {
  const num = (v: number): string => renderNumber(v, names, e);
  switch (i.k) {
    case 'star': return '*';
    case 'value': return num(i.v);
    case 'range': return `${num(i.a)}-${num(i.b)}`;
    case 'step': return `${i.from === 'star' ? '*' : typeof i.from === 'number' ? num(i.from) : `${num(i.from[0])}-${num(i.from[1])}`}/${i.n}`;
    case 'L': return 'L';
    case 'LW': return 'LW';
    case 'Ln': return `L-${i.n}`;
    case 'W': return `${i.n}W`;
    case 'dL': return `${num(i.d)}L`;
    case 'nth': return `${num(i.d)}#${i.n}`;
  }
}

function render(e: Expr): string {
  const f = (x: Field, names: readonly string[] | null, star = '*'): string => (x === null ? star : x.map((i) => renderItem(i, names, e)).join(','));
  return [f(e.second, null), f(e.minute, null), f(e.hour, null), f(e.dom, null, e.question ? '?' : '*'), f(e.month, MONTHS), f(e.dow, DAYS, e.question ? '?' : '*')].join(' ');
}

const daysIn = (y: number, m: number): number => new Date(Date.UTC(y, m, 0)).getUTCDate();
const weekday = (y: number, m: number, d: number): number => new Date(Date.UTC(y, m - 1, d)).getUTCDay();

// The oracle's helpers called for every second it scans are declared once, at the top level: a
// function declared inside them is named afresh at each call under tsx, which costs more than
// the check itself.

/** The low end of a range: 7 is Sunday, 0, in the day-of-week field. */
function low(a: number, s: Spec): number {
  return s.dow && a === 7 ? 0 : a;
}

/** Whether Spring number `x` is in a numeric item of a field with spec `s`. */
function inNumItem(x: number, i: Item, s: Spec): boolean {
  switch (i.k) {
    case 'star': return x >= s.starMin && x <= s.max;
    case 'value': return x === i.v;
    case 'range': return x >= low(i.a, s) && x <= i.b;
    case 'step': {
      const [start, end] = i.from === 'star' ? [s.starMin, s.max] : typeof i.from === 'number' ? [i.from, s.max] : [low(i.from[0], s), i.from[1]];
      return x >= start && x <= end && (x - start) % i.n === 0;
    }
    default: return false;
  }
}

interface Wall { y: number; mo: number; d: number; h: number; mi: number; s: number }

function dayMatches(w: Wall, dom: Field, month: Field, dow: Field): boolean {
  const last = daysIn(w.y, w.mo);
  const wd = weekday(w.y, w.mo, w.d);
  const domOk = dom === null || dom.some((i) => {
    if (i.k === 'L') return w.d === last;
    if (i.k === 'LW') { const l = weekday(w.y, w.mo, last); return w.d === (l === 6 ? last - 1 : l === 0 ? last - 2 : last); }
    if (i.k === 'Ln') return w.d === last - i.n;
    if (i.k === 'W') {
      if (i.n > last) return false;
      const nd = weekday(w.y, w.mo, i.n);
      const target = nd === 6 ? (i.n === 1 ? 3 : i.n - 1) : nd === 0 ? (i.n === last ? -1 : i.n + 1) : i.n;
      return w.d === target;
    }
    return inNumItem(w.d, i, DOM);
  });
  const dowOk = dow === null || dow.some((i) => {
    if (i.k === 'dL') return wd === i.d % 7 && w.d + 7 > last;
    if (i.k === 'nth') return wd === i.d % 7 && Math.ceil(w.d / 7) === i.n;
    return inNumItem(wd, i, DOW) || (wd === 0 && inNumItem(7, i, DOW));
  });
  return domOk && dowOk && (month === null || month.some((i) => inNumItem(w.mo, i, MONTH)));
}

/** Whether `x` is in a field (`null`: every value). */
function inField(x: number, f: Field, s: Spec): boolean {
  return f === null || f.some((i) => inNumItem(x, i, s));
}

function timeMatches(w: Wall, e: Expr): boolean {
  return inField(w.s, e.second, SEC) && inField(w.mi, e.minute, SEC) && inField(w.h, e.hour, HOUR);
}

const ZONES = ['UTC', '+05:30', '-03:00', '+14:00', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'America/Santiago', 'America/Havana', 'Pacific/Chatham', 'America/St_Johns', 'Asia/Kolkata'];

/** The oracle's view of a zone: wall clock and offset by the minute, from Intl or arithmetic. */
function oracle(zone: string): { wall(ms: number): Wall; offset(ms: number): number } {
  const fixed = /^([+-])(\d\d):(\d\d)$/.exec(zone);
  const fixedMs = fixed === null ? null : (fixed[1] === '-' ? -1 : 1) * (Number(fixed[2]) * 60 + Number(fixed[3])) * 60_000;
  const fmt = new Intl.DateTimeFormat('en-US', { timeZone: fixed === null ? zone : 'UTC', hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
  const cache = new Map<number, number>();
  const offset = (ms: number): number => {
    if (fixedMs !== null) return fixedMs;
    const minute = Math.floor(ms / 60_000) * 60_000;
    let o = cache.get(minute);
    if (o === undefined) {
      const p = Object.fromEntries(fmt.formatToParts(minute).map((x) => [x.type, Number(x.value)]));
      o = Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day, (p.hour ?? 0) % 24, p.minute, p.second) - minute;
      cache.set(minute, o);
    }
    return o;
  };
  const wall = (ms: number): Wall => {
    const d = new Date(ms + offset(ms));
    return { y: d.getUTCFullYear(), mo: d.getUTCMonth() + 1, d: d.getUTCDate(), h: d.getUTCHours(), mi: d.getUTCMinutes(), s: d.getUTCSeconds() };
  };
  return { wall, offset };
}

/** Whether the local time at `ms` already happened earlier (a fall back in the last 3 hours). */
function isRepeat(o: ReturnType<typeof oracle>, ms: number): boolean {
  const before = o.offset(ms - 3 * 3_600_000);
  const now = o.offset(ms);
  return before > now && o.offset(ms - (before - now)) === before;
}

/** Instants near the 2026 transitions of several zones, and anywhere in 1990-2060. */
const instant = fc.oneof(
  fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2060, 0, 1) }),
  fc.tuple(fc.constantFrom('2026-03-08T07:00:00Z', '2026-11-01T06:00:00Z', '2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z', '2026-04-04T15:00:00Z', '2026-10-03T16:00:00Z', '2026-04-05T03:00:00Z', '2026-09-06T04:00:00Z'), fc.integer({ min: -3 * 3_600_000, max: 3 * 3_600_000 }))
    .map(([t, d]) => Date.parse(t) + d),
);

const WINDOW_MS = 3 * 3_600_000;

/** The properties of one call of next(), checked against the oracle. */
function checkNext(e: Expr, zone: string, after: number): void {
  const text = render(e);
  const schedule = parseCron(text, { zone });
  const started = performance.now();
  const fire = schedule.next(new Date(after));
  assert.ok(performance.now() - started < 1000, `next() took ${performance.now() - started} ms for ${text}`);
  const o = oracle(zone);
  if (fire !== null) {
    const ms = fire.getTime();
    assert.ok(ms > after, `${text} in ${zone}: ${fire.toISOString()} is not after ${new Date(after).toISOString()}`);
    assert.equal(ms % 1000, 0);
    const w = o.wall(ms);
    assert.ok(timeMatches(w, e) && dayMatches(w, e.dom, e.month, e.dow), `${text} in ${zone}: ${fire.toISOString()} (${JSON.stringify(w)}) does not match`);
    assert.ok(!isRepeat(o, ms), `${text} in ${zone}: ${fire.toISOString()} repeats a local time`);
  }
  const end = Math.min(fire === null ? Infinity : fire.getTime(), after + WINDOW_MS);
  for (let s = Math.floor(after / 1000) * 1000 + 1000; s < end; s += 1000) {
    const w = o.wall(s);
    if (timeMatches(w, e) && dayMatches(w, e.dom, e.month, e.dow) && !isRepeat(o, s)) {
      assert.fail(`${text} in ${zone}: ${new Date(s).toISOString()} is a valid fire before ${fire?.toISOString() ?? 'null'}`);
    }
  }
}

/** Times of day around the transitions (00:00-03:59 local, and 23:xx), any day. */
const nearTransition = fc.record({
  second: fc.oneof(fc.constant(null), fc.array(numItem(SEC), { minLength: 1, maxLength: 2 })),
  minute: fc.oneof(fc.constant(null), fc.array(numItem(SEC), { minLength: 1, maxLength: 2 })),
  hour: fc.array(fc.oneof(
    fc.integer({ min: 0, max: 3 }).map((v) => ({ k: 'value', v }) as const),
    fc.constant({ k: 'value', v: 23 } as const),
    fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 4 })).map(([a, b]) => ({ k: 'range', a: Math.min(a, b), b: Math.max(a, b) }) as const),
  ), { minLength: 1, maxLength: 2 }),
  dom: fc.constant(null), month: fc.constant(null), dow: fc.constant(null),
  names: fc.constant(false), lower: fc.constant(false), question: fc.boolean(),
});

describe('next() over generated expressions, zones and instants', () => {
  test('terminates quickly, is strictly after its argument, matches every field, is a first occurrence, misses nothing', () => {
    fc.assert(fc.property(expression, fc.constantFrom(...ZONES), instant, checkNext), { numRuns: 300 });
  });
  test('the same, for times of day around daylight-saving changes', () => {
    const dstInstant = fc.tuple(
      fc.constantFrom('2026-03-08T07:00:00Z', '2026-11-01T06:00:00Z', '2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z', '2026-04-04T15:00:00Z', '2026-10-03T15:30:00Z', '2026-04-05T03:00:00Z', '2026-09-06T04:00:00Z', '2026-03-08T05:00:00Z', '2026-11-01T05:00:00Z'),
      fc.integer({ min: -2 * 3_600_000, max: 2 * 3_600_000 }),
    ).map(([t, d]) => Date.parse(t) + d);
    fc.assert(fc.property(nearTransition, fc.constantFrom('America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'America/Santiago', 'America/Havana', 'Pacific/Chatham'), dstInstant, checkNext), { numRuns: 300 });
  });
});

/** Day fields only, at local noon, which exists every day in every zone. */
const dayRules = fc.record({
  second: fc.constant(null), minute: fc.constant(null), hour: fc.constant(null),
  dom: field(domItem, 2), month: field(numItem(MONTH), 4), dow: field(dowItem, 3),
  names: fc.boolean(), lower: fc.boolean(), question: fc.boolean(),
});

describe('day rules over consecutive fires', () => {
  test('the fires of 0 0 12 <day fields> are exactly the matching days, in order', () => {
    const DAY = 86_400_000;
    const dayNumber = (w: Wall): number => Math.floor(Date.UTC(w.y, w.mo - 1, w.d) / DAY);
    const dateOf = (n: number): Wall => {
      const d = new Date(n * DAY);
      return { y: d.getUTCFullYear(), mo: d.getUTCMonth() + 1, d: d.getUTCDate(), h: 12, mi: 0, s: 0 };
    };
    fc.assert(
      fc.property(dayRules, fc.constantFrom(...ZONES), fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2060, 0, 1) }), (e, zone, start) => {
        const text = `0 0 12 ${render(e).split(' ').slice(3).join(' ')}`;
        const schedule = parseCron(text, { zone });
        const o = oracle(zone);
        const first = o.wall(start);
        // The first day that may still fire: today if its noon is ahead.
        let day = dayNumber(first) + (first.h < 12 ? 0 : 1);
        let at = new Date(start);
        for (let i = 0; i < 12; i++) {
          const fire = schedule.next(at);
          const w = fire === null ? null : o.wall(fire.getTime());
          const until = w === null ? day + 2 * 366 : dayNumber(w);
          for (; day < until; day++) {
            assert.ok(!dayMatches(dateOf(day), e.dom, e.month, e.dow), `${text} in ${zone}: ${JSON.stringify(dateOf(day))} matches but was skipped`);
          }
          if (w === null || fire === null) return;
          assert.ok(w.h === 12 && w.mi === 0 && w.s === 0 && dayMatches(w, e.dom, e.month, e.dow), `${text} in ${zone}: ${fire.toISOString()} does not match`);
          day = until + 1;
          at = fire;
        }
      }),
      { numRuns: 600 },
    );
  });
});

const cronish = fc.array(fc.constantFrom('*', '?', '/', '-', ',', '#', 'L', 'W', 'LW', '0', '1', '5', '7', '12', '31', '32', '59', '60', 'MON', 'sun', 'Jan', 'L-3', '99999999999999999999', '@daily', '@', ' ', '\t', 'é', '\u0000'), { maxLength: 12 }).map((p) => p.join(''));

describe('parseCron never throws anything but a LeaseholdError', () => {
  const onlyLeasehold = (expr: unknown, zone?: unknown): void => {
    try {
      const s = parseCron(expr as string, zone === undefined ? {} : { zone: zone as string });
      const next = s.next(new Date('2026-05-05T00:00:00Z'));
      assert.ok(next === null || next instanceof Date);
    } catch (err) {
      assert.ok(isLeaseholdError(err), `threw ${String(err)} for ${JSON.stringify(expr)}`);
    }
  };
  test('arbitrary strings', () => {
    fc.assert(fc.property(fc.string({ maxLength: 60 }), (s) => onlyLeasehold(s)), { numRuns: 1000 });
  });
  test('six cron-like fields', () => {
    fc.assert(fc.property(fc.array(cronish, { minLength: 6, maxLength: 6 }), (f) => onlyLeasehold(f.join(' '))), { numRuns: 3000 });
  });
  test('any value as expression, any string as zone', () => {
    fc.assert(fc.property(fc.anything(), fc.option(fc.string({ maxLength: 20 }), { nil: undefined }), (x, zone) => onlyLeasehold(x, zone)), { numRuns: 500 });
  });
});

describe("a cron trigger's remembered answers", () => {
  test('equal the schedule asked afresh, whatever the order of the questions (back in time, repeats, far jumps)', () => {
    const exprs = ['*/10 * * * * *', '0 0 * * * *', '0 0 9-17 * * MON-FRI', '0 30 2 * * *', '0 0 0 29 2 *', '0 0 0 31 6 *'];
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York'];
    const base = Date.parse('2026-03-01T00:00:00Z');
    fc.assert(
      fc.property(fc.constantFrom(...exprs), fc.constantFrom(...zones), fc.array(fc.oneof(fc.integer({ min: 0, max: 400 * 86_400_000 }), fc.integer({ min: 0, max: 60_000 })), { minLength: 1, maxLength: 40 }), (expr, zone, offsets) => {
        // A fresh key, so no other test's answers are remembered.
        const remembered = cronTrigger(expr, zone, `property ${Math.random()}`);
        const plain = parseCron(expr, { zone });
        for (const o of offsets) {
          const at = base + o;
          assert.equal(remembered.next(at), plain.next(new Date(at))?.getTime() ?? null, `${expr} in ${zone} after ${new Date(at).toISOString()}`);
        }
      }),
      { numRuns: 300 },
    );
  });
});
