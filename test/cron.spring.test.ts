/**
 * Conformance with Spring Framework's documented cron dialect: the examples of
 * the `CronExpression` javadoc and the cases of `CronExpressionTests`,
 * `BitsCronFieldTests`, `CronFieldTests` and `QuartzCronFieldTests`
 * (spring-context, org.springframework.scheduling.support). Spring's tests that
 * start from "now" are pinned to a date here. Each test names the Spring case
 * and the rule it checks.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCron } from '../src/cron/index.js';
import { isLeaseholdError } from '../src/errors.js';

interface Case {
  /** Spring source and the rule checked. */
  readonly rule: string;
  readonly expr: string;
  /** ISO-8601 with offset; `Z` for Spring's LocalDateTime cases, which run here in UTC. */
  readonly from: string;
  /** The next fire times, in order; `[]` when there is none. */
  readonly expected: readonly string[];
  readonly zone?: string;
}

/** The next `count` fire times after `from`, as UTC ISO strings; stops at null. */
function fires(expr: string, from: string, count: number, zone = 'UTC'): string[] {
  const schedule = parseCron(expr, { zone });
  const out: string[] = [];
  let at: Date | null = new Date(from);
  while (out.length < count) {
    at = schedule.next(at);
    if (at === null) break;
    out.push(at.toISOString());
  }
  return out;
}

function check(c: Case): void {
  const expected = c.expected.map((e) => new Date(e).toISOString());
  assert.deepEqual(fires(c.expr, c.from, Math.max(expected.length, 1), c.zone), expected);
}

const cases: readonly Case[] = [
  // CronExpressionTests: seconds, minutes, hours
  { rule: 'matchAll: * * * * * * fires every second, strictly after the seed', expr: '* * * * * *', from: '2026-05-05T10:20:30.500Z', expected: ['2026-05-05T10:20:31Z', '2026-05-05T10:20:32Z'] },
  { rule: 'matchLastSecond: second 58 is followed by 59', expr: '* * * * * *', from: '2026-05-05T10:20:58Z', expected: ['2026-05-05T10:20:59Z', '2026-05-05T10:21:00Z'] },
  { rule: 'matchSpecificSecond: 10 * * * * * from second 9', expr: '10 * * * * *', from: '2026-05-05T10:20:09Z', expected: ['2026-05-05T10:20:10Z'] },
  { rule: 'incrementSecondAndRollover: a passed second rolls over to the next minute', expr: '10 * * * * *', from: '2026-05-05T10:20:11Z', expected: ['2026-05-05T10:21:10Z'] },
  { rule: 'secondRange: 10-15 is inclusive', expr: '10-15 * * * * *', from: '2026-05-05T10:20:09Z', expected: ['2026-05-05T10:20:10Z', '2026-05-05T10:20:11Z', '2026-05-05T10:20:12Z', '2026-05-05T10:20:13Z', '2026-05-05T10:20:14Z', '2026-05-05T10:20:15Z', '2026-05-05T10:21:10Z'] },
  { rule: 'incrementMinute: 0 * * * * * fires at each minute', expr: '0 * * * * *', from: '2026-05-05T10:10:00Z', expected: ['2026-05-05T10:11:00Z', '2026-05-05T10:12:00Z'] },
  { rule: 'incrementMinuteAndRollover: 0 10 * * * * after minute 11 is the next hour', expr: '0 10 * * * *', from: '2026-05-05T11:11:00Z', expected: ['2026-05-05T12:10:00Z'] },
  { rule: 'incrementHour: 0 0 * * * * is the top of every hour', expr: '0 0 * * * *', from: '2026-10-30T11:01:00Z', expected: ['2026-10-30T12:00:00Z', '2026-10-30T13:00:00Z'] },
  { rule: 'incrementHourAndRollover: hour 23 rolls over to the next day', expr: '0 0 * * * *', from: '2026-09-10T23:01:00Z', expected: ['2026-09-11T00:00:00Z'] },
  { rule: 'specificMinuteSecond: 55 5 * * * *', expr: '55 5 * * * *', from: '2026-05-05T10:04:54Z', expected: ['2026-05-05T10:05:55Z', '2026-05-05T11:05:55Z'] },
  { rule: 'specificHourSecond: 55 * 10 * * *', expr: '55 * 10 * * *', from: '2026-05-05T09:00:54Z', expected: ['2026-05-05T10:00:55Z', '2026-05-05T10:01:55Z'] },
  { rule: 'specificMinuteHour: * 5 10 * * * fires every second of 10:05', expr: '* 5 10 * * *', from: '2026-05-05T09:04:00Z', expected: ['2026-05-05T10:05:00Z', '2026-05-05T10:05:01Z'] },
  // CronExpressionTests: days and months
  { rule: 'incrementDayOfMonth: 0 0 0 * * * is every midnight', expr: '0 0 0 * * *', from: '2026-05-01T10:00:00Z', expected: ['2026-05-02T00:00:00Z', '2026-05-03T00:00:00Z'] },
  { rule: 'incrementDayOfMonthAndRollover: day 10 after day 11 is next month', expr: '* * * 10 * *', from: '2026-05-11T10:00:00Z', expected: ['2026-06-10T00:00:00Z', '2026-06-10T00:00:01Z'] },
  { rule: 'specificDayOfMonthSecond: 55 * * 3 * *', expr: '55 * * 3 * *', from: '2026-05-02T10:00:54Z', expected: ['2026-05-03T00:00:55Z', '2026-05-03T00:01:55Z'] },
  { rule: 'dailyTriggerInShortMonth: September has 30 days', expr: '0 0 0 * * *', from: '2026-09-30T10:00:00Z', expected: ['2026-10-01T00:00:00Z', '2026-10-02T00:00:00Z'] },
  { rule: 'dailyTriggerInLongMonth: August has 31 days', expr: '0 0 0 * * *', from: '2026-08-30T10:00:00Z', expected: ['2026-08-31T00:00:00Z', '2026-09-01T00:00:00Z'] },
  { rule: 'incrementMonth: 0 0 0 1 * * is the first of each month', expr: '0 0 0 1 * *', from: '2026-10-30T10:00:00Z', expected: ['2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z'] },
  { rule: 'incrementMonthAndRollover: December rolls over to January', expr: '0 0 0 1 * *', from: '2010-12-31T10:00:00Z', expected: ['2011-01-01T00:00:00Z', '2011-02-01T00:00:00Z'] },
  { rule: 'monthlyTriggerInLongMonth: day 31 in October', expr: '0 0 0 31 * *', from: '2026-10-30T10:00:00Z', expected: ['2026-10-31T00:00:00Z'] },
  { rule: 'specificDate: * * * 3 11 *', expr: '* * * 3 11 *', from: '2026-10-02T10:00:00Z', expected: ['2026-11-03T00:00:00Z', '2026-11-03T00:00:01Z'] },
  { rule: 'nonExistentSpecificDate: 0 0 0 31 6 * never fires (next is null)', expr: '0 0 0 31 6 *', from: '2026-03-10T10:00:00Z', expected: [] },
  { rule: 'leapYearSpecificDate: 0 0 0 29 2 * fires in leap years only', expr: '0 0 0 29 2 *', from: '2007-02-10T10:00:00Z', expected: ['2008-02-29T00:00:00Z', '2012-02-29T00:00:00Z'] },
  { rule: 'monthSequence: a/n in month runs from a to 12 (1/3 = JAN, APR, JUL, OCT)', expr: '0 30 23 30 1/3 ?', from: '2010-12-30T12:00:00Z', expected: ['2011-01-30T23:30:00Z', '2011-04-30T23:30:00Z', '2011-07-30T23:30:00Z'] },
  // CronExpressionTests: day of week, and both day fields
  { rule: 'incrementDayOfWeekByOne: day-of-week 2 is Tuesday', expr: '* * * * * 2', from: '2026-05-04T10:00:00Z', expected: ['2026-05-05T00:00:00Z'] },
  { rule: 'incrementDayOfWeekAndRollover: from Wednesday the next Tuesday', expr: '* * * * * 2', from: '2026-05-06T10:00:00Z', expected: ['2026-05-12T00:00:00Z'] },
  { rule: 'weekDaySequence: MON-FRI skips the weekend, ? is * in day-of-month', expr: '0 0 7 ? * MON-FRI', from: '2009-09-26T10:00:00Z', expected: ['2009-09-28T07:00:00Z', '2009-09-29T07:00:00Z', '2009-09-30T07:00:00Z'] },
  { rule: 'fixedDays: both day fields restricted means both must match (29 Feb on a Wednesday)', expr: '0 0 0 29 2 WED', from: '2012-02-29T01:00:00Z', expected: ['2040-02-29T00:00:00Z'] },
  { rule: 'friday13th: 0 0 0 13 * FRI fires only on Friday the 13th', expr: '0 0 0 13 * FRI', from: '2018-07-31T11:47:14Z', expected: ['2019-09-13T00:00:00Z', '2019-12-13T00:00:00Z', '2020-03-13T00:00:00Z'] },
  { rule: 'everyTenDays: */10 in day-of-month is 1,11,21,31, and-ed with day-of-week 5', expr: '0 15 12 */10 1-8 5', from: '2021-04-30T12:14:59Z', expected: ['2021-05-21T12:15:00Z', '2021-06-11T12:15:00Z', '2022-01-21T12:15:00Z'] },
  { rule: 'sundayToFriday: SUN-FRI is 7-5, where 7 starting a range means 0', expr: '0 0 0 ? * SUN-FRI', from: '2021-02-25T15:00:00Z', expected: ['2021-02-26T00:00:00Z', '2021-02-28T00:00:00Z'] },
  { rule: 'various: 3-57 13-28 17,18 1,15 3-12 6#1 (both day fields, nth weekday)', expr: '3-57 13-28 17,18 1,15 3-12 6#1', from: '2022-09-15T17:44:11Z', expected: ['2022-10-01T17:13:03Z'] },
  { rule: 'various: */28 56 22 */6 * * (*/6 in day-of-month is 1,7,13,19,25,31)', expr: '*/28 56 22 */6 * *', from: '2022-02-27T08:00:42Z', expected: ['2022-03-01T22:56:00Z'] },
  // CronExpressionTests: Quartz fields
  { rule: 'quartzLastDayOfMonth: L is the last day of the month', expr: '0 0 0 L * *', from: '2008-01-04T10:00:00Z', expected: ['2008-01-31T00:00:00Z', '2008-02-29T00:00:00Z', '2008-03-31T00:00:00Z', '2008-04-30T00:00:00Z'] },
  { rule: 'quartzLastDayOfMonthOffset: L-3 is the third-to-last day', expr: '0 0 0 L-3 * *', from: '2008-01-04T10:00:00Z', expected: ['2008-01-28T00:00:00Z', '2008-02-26T00:00:00Z', '2008-03-28T00:00:00Z', '2008-04-27T00:00:00Z'] },
  {
    rule: 'quartzLastWeekdayOfMonth: LW is the last Monday-Friday of the month', expr: '0 0 0 LW * *', from: '2008-01-04T10:00:00Z',
    expected: ['2008-01-31', '2008-02-29', '2008-03-31', '2008-04-30', '2008-05-30', '2008-06-30', '2008-07-31', '2008-08-29', '2008-09-30', '2008-10-31', '2008-11-28', '2008-12-31'].map((d) => `${d}T00:00:00Z`),
  },
  {
    rule: 'quartzLastDayOfWeekOffset: 5L is the last Friday of the month', expr: '0 0 0 * * 5L', from: '2008-01-04T10:00:00Z',
    expected: ['2008-01-25', '2008-02-29', '2008-03-28', '2008-04-25', '2008-05-30', '2008-06-27', '2008-07-25', '2008-08-29', '2008-09-26', '2008-10-31', '2008-11-28', '2008-12-26'].map((d) => `${d}T00:00:00Z`),
  },
  { rule: 'quartzWeekdayNearestTo15: 15W moves Saturday to Friday, Sunday to Monday', expr: '0 0 0 15W * ?', from: '2020-01-01T00:00:00Z', expected: ['2020-01-15T00:00:00Z', '2020-02-14T00:00:00Z', '2020-03-16T00:00:00Z', '2020-04-15T00:00:00Z'] },
  { rule: 'quartzWeekdayNearestTo1: 1W is the first weekday of the month', expr: '0 0 0 1W * ?', from: '2019-12-31T00:00:00Z', expected: ['2020-01-01T00:00:00Z', '2020-02-03T00:00:00Z', '2020-03-02T00:00:00Z', '2020-04-01T00:00:00Z'] },
  { rule: 'quartzWeekdayNearestTo1: Saturday the 1st moves to Monday the 3rd', expr: '0 0 0 1W * ?', from: '2022-01-01T00:00:00Z', expected: ['2022-01-03T00:00:00Z'] },
  { rule: 'quartzWeekdayNearestTo1: Sunday the 1st moves to Monday the 2nd', expr: '0 0 0 1W * ?', from: '2021-08-01T00:00:00Z', expected: ['2021-08-02T00:00:00Z'] },
  { rule: 'quartzWeekdayNearestTo31: 31W only in months with 31 days', expr: '0 0 0 31W * ?', from: '2020-01-01T00:00:00Z', expected: ['2020-01-31T00:00:00Z', '2020-03-31T00:00:00Z', '2020-07-31T00:00:00Z', '2020-08-31T00:00:00Z', '2020-10-30T00:00:00Z', '2020-12-31T00:00:00Z'] },
  { rule: 'quartz2ndFridayOfTheMonth: 5#2 is the second Friday', expr: '0 0 0 ? * 5#2', from: '2020-01-01T00:00:00Z', expected: ['2020-01-10T00:00:00Z', '2020-02-14T00:00:00Z', '2020-03-13T00:00:00Z', '2020-04-10T00:00:00Z'] },
  { rule: 'quartz2ndFridayOfTheMonthDayName: FRI#2 is the second Friday', expr: '0 0 0 ? * FRI#2', from: '2020-01-01T00:00:00Z', expected: ['2020-01-10T00:00:00Z', '2020-02-14T00:00:00Z', '2020-03-13T00:00:00Z', '2020-04-10T00:00:00Z'] },
  { rule: 'quartzFifthWednesdayOfTheMonth: 3#5 only in months with five Wednesdays', expr: '0 0 0 ? * 3#5', from: '2020-01-01T00:00:00Z', expected: ['2020-01-29T00:00:00Z', '2020-04-29T00:00:00Z', '2020-07-29T00:00:00Z', '2020-09-30T00:00:00Z', '2020-12-30T00:00:00Z'] },
  { rule: 'dayOfMonthListWithQuartz: 1W,15,LW mixes Quartz and plain days in a list', expr: '0 0 0 1W,15,LW * ?', from: '2019-12-30T00:00:00Z', expected: ['2019-12-31T00:00:00Z', '2020-01-01T00:00:00Z', '2020-01-15T00:00:00Z', '2020-01-31T00:00:00Z'] },
  { rule: 'dayOfWeekListWithQuartz: THU#1,THU#3,THU#5 is a list of nth weekdays', expr: '0 0 0 ? * THU#1,THU#3,THU#5', from: '2019-12-31T00:00:00Z', expected: ['2020-01-02T00:00:00Z', '2020-01-16T00:00:00Z', '2020-01-30T00:00:00Z'] },
  { rule: 'quartzLastDayOfMonthEveryHour: 0 0 * L * * fires every hour of the last day', expr: '0 0 * L * *', from: '2021-01-30T00:01:00Z', expected: ['2021-01-31T00:00:00Z', '2021-01-31T01:00:00Z'] },
  { rule: 'quartzLastDayOfMonthEveryHour: later hours of the last day', expr: '0 0 * L * *', from: '2021-01-31T01:00:00Z', expected: ['2021-01-31T02:00:00Z'] },
  { rule: 'quartzLastDayOfMonthOffsetEveryHour: 0 0 * L-1 * *', expr: '0 0 * L-1 * *', from: '2021-01-29T00:01:00Z', expected: ['2021-01-30T00:00:00Z', '2021-01-30T01:00:00Z'] },
  { rule: 'quartzLastDayOfMonthOffsetEveryHour: later hours of the day', expr: '0 0 * L-1 * *', from: '2021-01-30T01:00:00Z', expected: ['2021-01-30T02:00:00Z'] },
  { rule: 'quartzFirstWeekdayOfMonthEveryHour: 0 0 * 1W * *', expr: '0 0 * 1W * *', from: '2021-01-31T00:01:00Z', expected: ['2021-02-01T00:00:00Z', '2021-02-01T01:00:00Z'] },
  { rule: 'quartzLastWeekdayOfMonthEveryHour: 0 0 * LW * *', expr: '0 0 * LW * *', from: '2021-01-28T00:01:00Z', expected: ['2021-01-29T00:00:00Z', '2021-01-29T01:00:00Z'] },
  { rule: 'quartz5thFridayOfTheMonthEveryHour: 0 0 * ? * FRI#5', expr: '0 0 * ? * FRI#5', from: '2021-01-28T00:01:00Z', expected: ['2021-01-29T00:00:00Z', '2021-01-29T01:00:00Z'] },
  { rule: 'quartzLastFridayOfTheMonthEveryHour: FRIL is the last Friday', expr: '0 0 * ? * FRIL', from: '2021-01-28T00:01:00Z', expected: ['2021-01-29T00:00:00Z', '2021-01-29T01:00:00Z'] },
  { rule: 'QuartzCronFieldTests.lastDayOfWeekOffset: 4L is the last Thursday', expr: '0 0 0 ? * 4L', from: '2020-06-16T00:00:00Z', expected: ['2020-06-25T00:00:00Z'] },
  { rule: 'QuartzCronFieldTests.lastWeekdayOfMonth: LW in June 2020 is Tuesday the 30th', expr: '0 0 0 LW * ?', from: '2020-06-16T00:00:00Z', expected: ['2020-06-30T00:00:00Z'] },
  // CronExpressionTests.daylightSaving (Europe/Amsterdam): a local time the clocks skip does not run that day
  { rule: 'daylightSaving: 09:00 keeps its local time across spring forward', expr: '0 0 9 * * *', zone: 'Europe/Amsterdam', from: '2021-03-27T09:00:00+01:00', expected: ['2021-03-28T09:00:00+02:00'] },
  { rule: 'daylightSaving: 09:00 keeps its local time across fall back', expr: '0 0 9 * * *', zone: 'Europe/Amsterdam', from: '2021-10-30T09:00:00+02:00', expected: ['2021-10-31T09:00:00+01:00'] },
  { rule: 'daylightSaving: 02:10 does not exist on 2013-03-31, the next run is the next day', expr: '0 10 2 * * *', zone: 'Europe/Amsterdam', from: '2013-03-31T01:09:00+01:00', expected: ['2013-04-01T02:10:00+02:00'] },
  { rule: 'daylightSaving: 00:05 from 01:00 on the spring-forward day is the next day', expr: '0 5 0 * * *', zone: 'Europe/Amsterdam', from: '2021-03-28T01:00:00+01:00', expected: ['2021-03-29T00:05:00+02:00'] },
  // CronExpression javadoc examples
  { rule: 'javadoc: "0 0 * * * *" = the top of every hour of every day', expr: '0 0 * * * *', from: '2026-05-05T10:30:00Z', expected: ['2026-05-05T11:00:00Z', '2026-05-05T12:00:00Z'] },
  { rule: 'javadoc: "*/10 * * * * *" = every ten seconds', expr: '*/10 * * * * *', from: '2026-05-05T10:30:55Z', expected: ['2026-05-05T10:31:00Z', '2026-05-05T10:31:10Z', '2026-05-05T10:31:20Z'] },
  { rule: 'javadoc: "0 0 8-10 * * *" = 8, 9 and 10 o\'clock of every day', expr: '0 0 8-10 * * *', from: '2026-05-05T07:00:00Z', expected: ['2026-05-05T08:00:00Z', '2026-05-05T09:00:00Z', '2026-05-05T10:00:00Z', '2026-05-06T08:00:00Z'] },
  { rule: 'javadoc: "0 0 6,19 * * *" = 6:00 AM and 7:00 PM every day', expr: '0 0 6,19 * * *', from: '2026-05-05T07:00:00Z', expected: ['2026-05-05T19:00:00Z', '2026-05-06T06:00:00Z'] },
  {
    rule: 'javadoc: "0 0/30 8-10 * * *" = 8:00, 8:30, 9:00, 9:30, 10:00 and 10:30 every day', expr: '0 0/30 8-10 * * *', from: '2026-05-05T07:00:00Z',
    expected: ['08:00', '08:30', '09:00', '09:30', '10:00', '10:30'].map((t) => `2026-05-05T${t}:00Z`).concat('2026-05-06T08:00:00Z'),
  },
  { rule: 'javadoc: "0 0 9-17 * * MON-FRI" = on the hour nine-to-five weekdays', expr: '0 0 9-17 * * MON-FRI', from: '2026-05-08T17:30:00Z', expected: ['2026-05-11T09:00:00Z', '2026-05-11T10:00:00Z'] },
  { rule: 'javadoc: "0 0 0 25 12 ?" = every Christmas Day at midnight', expr: '0 0 0 25 12 ?', from: '2026-05-05T00:00:00Z', expected: ['2026-12-25T00:00:00Z', '2027-12-25T00:00:00Z'] },
  { rule: 'javadoc: "0 0 0 * * THUL" = last Thursday of the month at midnight', expr: '0 0 0 * * THUL', from: '2026-05-01T00:00:00Z', expected: ['2026-05-28T00:00:00Z', '2026-06-25T00:00:00Z'] },
  { rule: 'javadoc: "0 0 0 ? * MON#1" = the first Monday in the month at midnight', expr: '0 0 0 ? * MON#1', from: '2026-05-05T00:00:00Z', expected: ['2026-06-01T00:00:00Z', '2026-07-06T00:00:00Z'] },
  // BitsCronFieldTests / CronFieldTests: what a field means
  { rule: 'BitsCronFieldTests.parse: seconds 57/2 is 57 and 59', expr: '57/2 * * * * *', from: '2026-05-05T10:00:00Z', expected: ['2026-05-05T10:00:57Z', '2026-05-05T10:00:59Z', '2026-05-05T10:01:57Z'] },
  { rule: 'BitsCronFieldTests.parse: hours 0-23/2 are the even hours', expr: '0 0 0-23/2 * * *', from: '2026-05-05T10:30:00Z', expected: ['2026-05-05T12:00:00Z', '2026-05-05T14:00:00Z'] },
  { rule: 'BitsCronFieldTests.parseLists: minutes 5,10-30/2', expr: '0 5,10-30/2 10 * * *', from: '2026-05-05T10:04:00Z', expected: ['2026-05-05T10:05:00Z', '2026-05-05T10:10:00Z', '2026-05-05T10:12:00Z'] },
  { rule: 'BitsCronFieldTests.parse: day-of-week 0 is Sunday', expr: '0 0 0 * * 0', from: '2026-05-05T00:00:00Z', expected: ['2026-05-10T00:00:00Z', '2026-05-17T00:00:00Z'] },
  { rule: 'BitsCronFieldTests.parse: day-of-week 7-5 is Sunday to Friday (7 starting a range is 0)', expr: '0 0 0 * * 7-5', from: '2026-05-08T12:00:00Z', expected: ['2026-05-10T00:00:00Z', '2026-05-11T00:00:00Z'] },
  { rule: 'BitsCronFieldTests.names: JAN,...,DEC is every month', expr: '0 0 0 1 JAN,FEB,MAR,APR,MAY,JUN,JUL,AUG,SEP,OCT,NOV,DEC *', from: '2026-05-05T00:00:00Z', expected: ['2026-06-01T00:00:00Z', '2026-07-01T00:00:00Z'] },
  { rule: 'BitsCronFieldTests.names: SUN,...,SAT is every day', expr: '0 0 0 * * SUN,MON,TUE,WED,THU,FRI,SAT', from: '2026-05-05T00:00:00Z', expected: ['2026-05-06T00:00:00Z', '2026-05-07T00:00:00Z'] },
  { rule: 'CronExpression: names are case-insensitive (mon-fri, jan)', expr: '0 0 9 * jan mon-fri', from: '2026-01-02T10:00:00Z', expected: ['2026-01-05T09:00:00Z'] },
  { rule: 'BitsCronField: * in day-of-week is 1-7, so */2 is MON, WED, FRI, SUN', expr: '0 0 0 * * */2', from: '2026-01-01T12:00:00Z', expected: ['2026-01-02T00:00:00Z', '2026-01-04T00:00:00Z', '2026-01-05T00:00:00Z', '2026-01-07T00:00:00Z'] },
  { rule: 'BitsCronField: a/n in day-of-week runs to 7, so 1/3 is MON, THU, SUN', expr: '0 0 0 * * 1/3', from: '2026-01-01T12:00:00Z', expected: ['2026-01-04T00:00:00Z', '2026-01-05T00:00:00Z', '2026-01-08T00:00:00Z'] },
  { rule: 'BitsCronField: 0 and 7 are both Sunday, and 0-7 is every day', expr: '0 0 0 * * 0-7', from: '2026-01-01T12:00:00Z', expected: ['2026-01-02T00:00:00Z', '2026-01-03T00:00:00Z', '2026-01-04T00:00:00Z'] },
  { rule: 'BitsCronField: a step larger than the range gives its start only (0/90 seconds is 0)', expr: '0/90 * * * * *', from: '2026-01-01T12:00:00Z', expected: ['2026-01-01T12:01:00Z'] },
  { rule: 'BitsCronField: */n in day-of-month starts at 1 (*/15 is 1, 16, 31)', expr: '0 0 0 */15 * *', from: '2026-01-01T12:00:00Z', expected: ['2026-01-16T00:00:00Z', '2026-01-31T00:00:00Z', '2026-02-01T00:00:00Z'] },
  { rule: 'BitsCronField: */n in month starts at JAN (*/4 is JAN, MAY, SEP)', expr: '0 0 0 1 */4 *', from: '2026-01-01T12:00:00Z', expected: ['2026-05-01T00:00:00Z', '2026-09-01T00:00:00Z', '2027-01-01T00:00:00Z'] },
];

describe('Spring CronExpression conformance', () => {
  for (const c of cases) test(c.rule, () => check(c));
});

describe('Spring macros (CronExpression.MACROS and CronExpressionTests)', () => {
  const macros: ReadonlyArray<readonly [string, string]> = [
    ['@yearly', '0 0 0 1 1 *'],
    ['@annually', '0 0 0 1 1 *'],
    ['@monthly', '0 0 0 1 * *'],
    ['@weekly', '0 0 0 * * 0'],
    ['@daily', '0 0 0 * * *'],
    ['@midnight', '0 0 0 * * *'],
    ['@hourly', '0 0 * * * *'],
  ];
  for (const [macro, six] of macros) {
    test(`${macro} is ${six}`, () => {
      for (const from of ['2026-05-05T10:20:30Z', '2027-12-31T23:59:59Z']) {
        assert.deepEqual(fires(macro, from, 3), fires(six, from, 3));
      }
    });
  }
  test('yearly: the next three are January 1st of the next three years', () => {
    assert.deepEqual(fires('@yearly', '2026-10-10T00:00:00Z', 3), ['2027-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z', '2029-01-01T00:00:00.000Z']);
  });
  test('weekly: Sunday at midnight', () => {
    assert.deepEqual(fires('@weekly', '2026-05-05T10:00:00Z', 2), ['2026-05-10T00:00:00.000Z', '2026-05-17T00:00:00.000Z']);
  });
  test('macros are case-insensitive and may be surrounded by spaces, as Spring trims and ignores case', () => {
    assert.deepEqual(fires('  @HOURLY ', '2026-05-05T10:20:30Z', 1), ['2026-05-05T11:00:00.000Z']);
  });
});

describe('Spring rejects these (isValidExpression, CronFieldTests, BitsCronFieldTests, QuartzCronFieldTests)', () => {
  const rejected: ReadonlyArray<readonly [expr: string, field: string]> = [
    ['*', 'six fields'],
    ['* * * * *', 'six fields'],
    ['* * * * * * *', 'six fields'],
    ['0-12/0 * * * * *', 'second'],
    ['60 * * * * *', 'second'],
    ['20-10 * * * * *', 'second'],
    ['* 60 * * * *', 'minute'],
    ['* * *ANYTHING_HERE * * *', 'hour'],
    ['* * * 0 * *', 'day-of-month'],
    ['* * * 32 * *', 'day-of-month'],
    ['* * * * 0 *', 'month'],
    ['* * * * 13 *', 'month'],
    ['* * * * * 8', 'day-of-week'],
    ['* * * * * *SUN', 'day-of-week'],
    ['* * * * * SUN*', 'day-of-week'],
    ...['1L', 'LL', '4L', '0L', 'W', 'W1', 'WW', '32W', 'L-0', 'L3'].map((f) => [`0 0 0 ${f} * ?`, 'day-of-month'] as const),
    ...['L', 'L1', 'LL', '-4L', '8L', '#', '1#', '#1', '1#L', 'L#1', '8#1', 'FRI#-1', 'FRI#0'].map((f) => [`0 0 0 ? * ${f}`, 'day-of-week'] as const),
    ['? * * * * *', 'second'],
    ['0 0 0 1 ? *', 'month'],
  ];
  for (const [expr, field] of rejected) {
    test(`${JSON.stringify(expr)} is rejected, naming ${field}`, () => {
      assert.throws(() => parseCron(expr), (err: unknown) => isLeaseholdError(err, 'invalidCron') && err.message.includes(field));
    });
  }
  test('isValidExpression: the empty string is rejected', () => {
    assert.throws(() => parseCron(''), (err: unknown) => isLeaseholdError(err, 'invalidCron'));
  });
});

describe('far years: Spring searches any year, and so does leasehold (the 400-year Gregorian cycle)', () => {
  test('*/15 * 1-4 * * * after 3912-07-01T09:53:50Z is 3912-07-02T01:00:00Z, as Spring answers', () => {
    assert.equal(parseCron('*/15 * 1-4 * * *').next(new Date('3912-07-01T09:53:50Z'))?.toISOString(), '3912-07-02T01:00:00.000Z');
  });

  test('a fire 400 years on is the same fire 400 years on: weekdays, leap days, Friday the 13th, zones and DST', () => {
    const cycle = (ms: number, k: number): number => ms + k * 146_097 * 86_400_000;
    const cases: Array<[string, string | undefined]> = [
      ['0 0 12 13 * FRI', undefined], ['0 0 0 29 2 *', undefined], ['0 30 2 * * *', 'America/New_York'],
      ['0 0 9-17 * * MON-FRI', 'Europe/Berlin'], ['0 0 0 L * *', 'Australia/Lord_Howe'], ['0 15 10 ? * 6#3', '+05:30'],
    ];
    for (const [expr, zone] of cases) {
      const s = parseCron(expr, zone ? { zone } : {});
      for (const from of ['2424-02-27T00:00:00Z', '2426-03-07T00:00:00Z', '2431-10-30T00:00:00Z']) {
        const base = s.next(new Date(from));
        assert.ok(base, `${expr} fires after ${from}`);
        for (const k of [1, 2, 5, 17]) {
          const far = s.next(new Date(cycle(Date.parse(from), k)));
          assert.equal(far?.getTime(), cycle(base.getTime(), k), `${expr} ${zone ?? 'UTC'} from ${from} plus ${400 * k} years`);
        }
      }
    }
  });

  test('the last instant a Date holds ends the search', () => {
    assert.equal(parseCron('0 0 0 1 1 *').next(new Date(8.64e15 - 1_000)), null);
  });
});
