/**
 * The status page's words (src/http/ui/client/format.ts): a schedule in words for
 * leasehold's cron dialect (SPEC 2: Spring's six fields, seconds first, both day fields must
 * match, `L`, `W`, `#`, macros), fixed schedules, durations and countdowns.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ago, countdown, cronWords, duration, scheduleWords } from '../src/http/ui/client/format.js';

test('cron expressions in words, with their zone', () => {
  const cases: Array<[string, string | null, string]> = [
    ['0 0 8 * * MON-FRI', 'Europe/Berlin', 'at 08:00, Monday to Friday, Europe/Berlin'],
    ['0 0 9-17 * * MON-FRI', 'UTC', 'every hour from 09:00 to 17:00, Monday to Friday, UTC'],
    ['0 */5 * * * *', null, 'every 5 minutes, UTC'],
    ['*/10 * * * * *', 'UTC', 'every 10 seconds, UTC'],
    ['30 * * * * *', 'UTC', 'every minute at :30, UTC'],
    ['0 0 */2 * * *', 'UTC', 'every 2 hours at :00, UTC'],
    ['0 30 2 * * *', 'America/New_York', 'at 02:30, every day, America/New_York'],
    ['0 0 8,12,17 * * SAT,SUN', '+02:00', 'at 08:00, 12:00 and 17:00, on Saturday and Sunday, +02:00'],
    ['@daily', 'UTC', 'at 00:00, every day, UTC'],
    ['@hourly', 'UTC', 'every hour at :00, UTC'],
    ['0 0 0 1 1 *', 'UTC', 'at 00:00, on day 1 of the month, in January, UTC'],
    ['0 0 0 1 */3 *', 'UTC', 'at 00:00, on day 1 of the month, every 3 months, UTC'],
    ['0 0 6 ? JAN-MAR MON', 'UTC', 'at 06:00, on Monday, in January to March, UTC'],
    // Spring's L, W and #.
    ['0 0 0 L * *', 'UTC', 'at 00:00, on the last day of the month, UTC'],
    ['0 0 0 LW * *', 'UTC', 'at 00:00, on the last weekday of the month, UTC'],
    ['0 0 0 L-3 * *', 'UTC', 'at 00:00, 3 days before the last day of the month, UTC'],
    ['0 15 10 15W * *', 'UTC', 'at 10:15, on the weekday nearest day 15 of the month, UTC'],
    ['0 0 9 * * 5L', 'UTC', 'at 09:00, on the last Friday of the month, UTC'],
    ['0 0 9 * * MON#2', 'UTC', 'at 09:00, on the second Monday of the month, UTC'],
    // Both day fields: a day must match both (SPEC 2), not either.
    ['0 0 12 13 * FRI', 'UTC', 'at 12:00, on day 13 of the month, if it is a Friday, UTC'],
    ['0 0 0 * * 0', 'UTC', 'at 00:00, on Sunday, UTC'],
    ['0 0 0 * * 7', 'UTC', 'at 00:00, on Sunday, UTC'],
  ];
  for (const [expr, zone, words] of cases) assert.equal(cronWords(expr, zone), words, expr);
});

test('what the words cannot say is null, and the page shows the expression alone', () => {
  assert.equal(cronWords('0 0 8 * *', 'UTC'), null, 'five fields');
  assert.equal(cronWords('x y z a b c', 'UTC'), null);
  assert.equal(cronWords('0 0 8 * * FOO', 'UTC'), null);
});

test('fixed schedules in words', () => {
  assert.equal(scheduleWords({ kind: 'fixedRate', expression: '10s', zone: null, intervalMs: 10_000 }), 'every 10 s');
  assert.equal(scheduleWords({ kind: 'fixedDelay', expression: '5m', zone: null, intervalMs: 300_000 }), '5 min after each run ends');
  assert.equal(scheduleWords({ kind: null, expression: null, zone: null, intervalMs: null }), null);
});

test('durations, countdowns and times ago', () => {
  assert.equal(duration(312), '312 ms');
  assert.equal(duration(4_230), '4.2 s');
  assert.equal(duration(42_000), '42 s');
  assert.equal(duration(65_000), '1 min 5 s');
  assert.equal(duration(3_725_000), '1 h 2 min');
  assert.equal(duration(90_000_000), '1 d 1 h');
  assert.equal(countdown(5_300, 0), 'in 6 s');
  assert.equal(countdown(400, 0), 'due now');
  assert.equal(countdown(-3_000, 0), '3 s overdue');
  assert.equal(ago(0, 4_200), '4 s ago');
  assert.equal(ago(0, 500), 'just now');
});
