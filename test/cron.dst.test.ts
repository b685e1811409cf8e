/**
 * Daylight saving, SPEC 2, in America/New_York and Europe/Berlin, 2026:
 * - New York springs forward on 2026-03-08 (02:00 EST -> 03:00 EDT) and falls
 *   back on 2026-11-01 (02:00 EDT -> 01:00 EST).
 * - Berlin springs forward on 2026-03-29 (02:00 CET -> 03:00 CEST) and falls
 *   back on 2026-10-25 (03:00 CEST -> 02:00 CET).
 * Rules: a local time the clocks skip does not exist, and a job due then does
 * not run that day (it is not moved). A local time that happens twice runs
 * once, at the first. Once the first has passed the day's run is spent, also
 * for a node started inside the repeated hour. Every local time fires at most
 * once, `*\/15` included.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type CronSchedule, formatInZone, parseCron } from '../src/cron/index.js';

const NY = 'America/New_York';
const BERLIN = 'Europe/Berlin';

/** The next `count` fire times after `from`, as local ISO-8601 with offset. */
function fires(expr: string, zone: string, from: string, count: number): string[] {
  const schedule = parseCron(expr, { zone });
  const out: string[] = [];
  let at: Date | null = new Date(from);
  while (out.length < count && (at = schedule.next(at)) !== null) out.push(formatInZone(at, zone));
  return out;
}

/** Every fire time in [from, to), as local ISO-8601 with offset. */
function firesBetween(schedule: CronSchedule, from: string, to: string): string[] {
  const end = new Date(to).getTime();
  const out: string[] = [];
  for (let at = schedule.next(new Date(new Date(from).getTime() - 1)); at !== null && at.getTime() < end; at = schedule.next(at)) {
    out.push(formatInZone(at, schedule.zone));
  }
  return out;
}

/** The local wall-clock part (no offset) of a formatted time. */
const local = (iso: string): string => iso.slice(0, 19);

describe('spring forward: a skipped local time does not run that day (SPEC 2)', () => {
  test('New York: 0 30 2 * * * skips 2026-03-08, not moved to 03:30', () => {
    const runs = fires('0 30 2 * * *', NY, '2026-03-07T12:00:00-05:00', 3);
    assert.deepEqual(runs, ['2026-03-09T02:30:00-04:00', '2026-03-10T02:30:00-04:00', '2026-03-11T02:30:00-04:00']);
    assert.ok(!runs.includes('2026-03-08T03:30:00-04:00'));
  });
  test('New York: 0 30 2 * * * runs 2026-03-07 and then 2026-03-09', () => {
    assert.deepEqual(fires('0 30 2 * * *', NY, '2026-03-06T12:00:00-05:00', 2), ['2026-03-07T02:30:00-05:00', '2026-03-09T02:30:00-04:00']);
  });
  test('Berlin: 0 30 2 * * * skips 2026-03-29, not moved to 03:30', () => {
    assert.deepEqual(fires('0 30 2 * * *', BERLIN, '2026-03-28T12:00:00+01:00', 2), ['2026-03-30T02:30:00+02:00', '2026-03-31T02:30:00+02:00']);
  });
  test('Berlin: a start inside the skipped hour goes on after it', () => {
    assert.deepEqual(fires('0 0 * * * *', BERLIN, '2026-03-29T01:59:59+01:00', 2), ['2026-03-29T03:00:00+02:00', '2026-03-29T04:00:00+02:00']);
  });
  test('New York: 0 0 3 * * * exists on the spring-forward day and runs at 03:00 EDT', () => {
    assert.deepEqual(fires('0 0 3 * * *', NY, '2026-03-08T01:00:00-05:00', 1), ['2026-03-08T03:00:00-04:00']);
  });
  test('New York: 0 0 2,3 * * * runs 03:00 once, 02:00 not at all', () => {
    assert.deepEqual(fires('0 0 2,3 * * *', NY, '2026-03-08T00:00:00-05:00', 3), ['2026-03-08T03:00:00-04:00', '2026-03-09T02:00:00-04:00', '2026-03-09T03:00:00-04:00']);
  });
  test('New York: * * * * * * goes from 01:59:59 EST to 03:00:00 EDT', () => {
    assert.deepEqual(fires('* * * * * *', NY, '2026-03-08T01:59:58-05:00', 2), ['2026-03-08T01:59:59-05:00', '2026-03-08T03:00:00-04:00']);
  });
  test('New York: 0 30 2 ? 3 SUN#2 names only skipped times and never fires', () => {
    assert.equal(parseCron('0 30 2 ? 3 SUN#2', { zone: NY }).next(new Date('2026-01-01T00:00:00Z')), null);
  });
});

describe('fall back: a repeated local time runs once, at the first (SPEC 2)', () => {
  test('New York: 0 30 1 * * * runs at 01:30 EDT on 2026-11-01, not again at 01:30 EST', () => {
    assert.deepEqual(fires('0 30 1 * * *', NY, '2026-10-31T12:00:00-04:00', 2), ['2026-11-01T01:30:00-04:00', '2026-11-02T01:30:00-05:00']);
  });
  test('Berlin: 0 30 2 * * * runs at 02:30 CEST on 2026-10-25, not again at 02:30 CET', () => {
    assert.deepEqual(fires('0 30 2 * * *', BERLIN, '2026-10-24T12:00:00+02:00', 2), ['2026-10-25T02:30:00+02:00', '2026-10-26T02:30:00+01:00']);
  });
  test('New York: a start in the first pass, before the time, runs it at the first', () => {
    assert.deepEqual(fires('0 30 1 * * *', NY, '2026-11-01T01:10:00-04:00', 1), ['2026-11-01T01:30:00-04:00']);
  });
});

describe('a start inside the repeated hour after the first occurrence has passed: the day\'s run is spent (SPEC 2)', () => {
  test('New York: from 01:40 EDT the next 01:30 is the next day', () => {
    assert.deepEqual(fires('0 30 1 * * *', NY, '2026-11-01T01:40:00-04:00', 1), ['2026-11-02T01:30:00-05:00']);
  });
  test('New York: from 01:10 EST (second pass, before the second 01:30) the next 01:30 is the next day', () => {
    assert.deepEqual(fires('0 30 1 * * *', NY, '2026-11-01T01:10:00-05:00', 1), ['2026-11-02T01:30:00-05:00']);
  });
  test('Berlin: from 02:10 CET (second pass) the next 02:30 is the next day', () => {
    assert.deepEqual(fires('0 30 2 * * *', BERLIN, '2026-10-25T02:10:00+01:00', 1), ['2026-10-26T02:30:00+01:00']);
  });
  test('Berlin: from 02:10 CET, 0 */15 * * * * goes on at 03:00 CET', () => {
    assert.deepEqual(fires('0 */15 * * * *', BERLIN, '2026-10-25T02:10:00+01:00', 2), ['2026-10-25T03:00:00+01:00', '2026-10-25T03:15:00+01:00']);
  });
  test('New York: from 01:20 EST, 0 */15 * * * * goes on at 02:00 EST', () => {
    assert.deepEqual(fires('0 */15 * * * *', NY, '2026-11-01T01:20:00-05:00', 1), ['2026-11-01T02:00:00-05:00']);
  });
});

describe('0 */15 * * * * across both changes: every local time at most once (SPEC 2)', () => {
  test('New York, spring forward: 01:45 EST is followed by 03:00 EDT', () => {
    assert.deepEqual(fires('0 */15 * * * *', NY, '2026-03-08T01:30:00-05:00', 3), ['2026-03-08T01:45:00-05:00', '2026-03-08T03:00:00-04:00', '2026-03-08T03:15:00-04:00']);
  });
  test('Berlin, spring forward: 01:45 CET is followed by 03:00 CEST', () => {
    assert.deepEqual(fires('0 */15 * * * *', BERLIN, '2026-03-29T01:30:00+01:00', 3), ['2026-03-29T01:45:00+01:00', '2026-03-29T03:00:00+02:00', '2026-03-29T03:15:00+02:00']);
  });
  test('New York, fall back: 01:00-01:45 run in EDT only, then 02:00 EST', () => {
    assert.deepEqual(fires('0 */15 * * * *', NY, '2026-11-01T00:50:00-04:00', 6), [
      '2026-11-01T01:00:00-04:00', '2026-11-01T01:15:00-04:00', '2026-11-01T01:30:00-04:00', '2026-11-01T01:45:00-04:00',
      '2026-11-01T02:00:00-05:00', '2026-11-01T02:15:00-05:00',
    ]);
  });
  test('Berlin, fall back: 02:00-02:45 run in CEST only, then 03:00 CET', () => {
    assert.deepEqual(fires('0 */15 * * * *', BERLIN, '2026-10-25T01:50:00+02:00', 6), [
      '2026-10-25T02:00:00+02:00', '2026-10-25T02:15:00+02:00', '2026-10-25T02:30:00+02:00', '2026-10-25T02:45:00+02:00',
      '2026-10-25T03:00:00+01:00', '2026-10-25T03:15:00+01:00',
    ]);
  });
  for (const [zone, springDay, fallDay] of [[NY, '2026-03-08', '2026-11-01'], [BERLIN, '2026-03-29', '2026-10-25']] as const) {
    const schedule = parseCron('0 */15 * * * *', { zone });
    test(`${zone}: the spring-forward day has 92 runs, none in the skipped hour`, () => {
      const runs = firesBetween(schedule, `${springDay}T00:00:00${zone === NY ? '-05:00' : '+01:00'}`, `${springDay}T23:59:59${zone === NY ? '-04:00' : '+02:00'}`);
      assert.equal(runs.length, 92);
      assert.equal(new Set(runs.map(local)).size, 92);
      assert.ok(!runs.some((r) => r.slice(11, 13) === '02'));
    });
    test(`${zone}: the fall-back day has 96 runs, each local time once, in a 25-hour day`, () => {
      const runs = firesBetween(schedule, `${fallDay}T00:00:00${zone === NY ? '-04:00' : '+02:00'}`, `${fallDay}T23:59:59${zone === NY ? '-05:00' : '+01:00'}`);
      assert.equal(runs.length, 96);
      assert.equal(new Set(runs.map(local)).size, 96);
    });
  }
  test('New York: * * * * * * never repeats a local second through fall back', () => {
    const runs = firesBetween(parseCron('* * * * * *', { zone: NY }), '2026-11-01T00:59:00-04:00', '2026-11-01T02:01:00-05:00');
    assert.equal(new Set(runs.map(local)).size, runs.length);
    assert.equal(runs.length, 62 * 60);
  });
  test('0 0 * * * * on the fall-back day runs 24 times, 01:00 once', () => {
    const runs = firesBetween(parseCron('0 0 * * * *', { zone: NY }), '2026-11-01T00:00:00-04:00', '2026-11-02T00:00:00-05:00');
    assert.equal(runs.length, 24);
    assert.deepEqual(runs.filter((r) => r.slice(11, 13) === '01'), ['2026-11-01T01:00:00-04:00']);
  });
});

describe('fixed offsets and UTC have no daylight saving', () => {
  test('UTC: 0 30 2 * * * runs every day', () => {
    assert.deepEqual(fires('0 30 2 * * *', 'UTC', '2026-03-07T12:00:00Z', 2), ['2026-03-08T02:30:00+00:00', '2026-03-09T02:30:00+00:00']);
  });
  test('-05:00: 0 30 2 * * * runs on 2026-03-08 as well', () => {
    assert.deepEqual(fires('0 30 2 * * *', '-05:00', '2026-03-07T12:00:00-05:00', 2), ['2026-03-08T02:30:00-05:00', '2026-03-09T02:30:00-05:00']);
  });
});
