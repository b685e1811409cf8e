/**
 * Wrong expressions name the field at fault (SPEC 2: `0 0 25 * * *` -> hour),
 * and zones: default UTC, fixed offsets, IANA ids checked when parsed, an
 * unknown zone an error naming it, never a silent fall back to UTC.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { parseCron, validateZone } from '../src/cron/index.js';
import { isLeaseholdError } from '../src/errors.js';
import { remember } from '../src/cron/cache.js';

function cronError(expr: unknown, ...fragments: string[]): (err: unknown) => boolean {
  return (err) => {
    assert.ok(isLeaseholdError(err, 'invalidCron'), `expected invalidCron for ${String(expr)}, got ${String(err)}`);
    for (const f of fragments) assert.ok(err.message.includes(f), `message ${JSON.stringify(err.message)} lacks ${JSON.stringify(f)}`);
    return true;
  };
}

describe('a wrong expression names the field and its value', () => {
  const cases: ReadonlyArray<readonly [expr: string, field: string, value: string]> = [
    ['0 0 25 * * *', 'hour', '25'],
    ['61 * * * * *', 'second', '61'],
    ['0 75 * * * *', 'minute', '75'],
    ['0 0 0 32 * *', 'day-of-month', '32'],
    ['0 0 0 1 13 *', 'month', '13'],
    ['0 0 0 1 FOO *', 'month', 'FOO'],
    ['0 0 0 * * 9', 'day-of-week', '9'],
    ['0 0 0 * * MON-', 'day-of-week', 'MON-'],
    ['0 0 0 * * FRI-MON', 'day-of-week', 'FRI-MON'],
    ['0 0 0 * * 5#6', 'day-of-week', '5#6'],
    ['0 0 0 L-31 * *', 'day-of-month', 'L-31'],
    ['/5 * * * * *', 'second', '/5'],
    ['0 /5 * * * *', 'minute', '/5'],
    ['0 */0 * * * *', 'minute', '*/0'],
    ['0 0 1,,2 * * *', 'hour', '1,,2'],
    ['0 0 1, * * *', 'hour', '1,'],
    ['0 0 -1 * * *', 'hour', '-1'],
    ['? 0 0 * * *', 'second', '?'],
    ['0 0 0 ?/2 * *', 'day-of-month', '?/2'],
    ['0 0 0 * ? *', 'month', '?'],
    ['0 0 0 1-5/2/3 * *', 'day-of-month', '1-5/2/3'],
    ['0 0 0 * * 1.5', 'day-of-week', '1.5'],
  ];
  for (const [expr, field, value] of cases) {
    test(`${JSON.stringify(expr)} -> ${field}`, () => {
      assert.throws(() => parseCron(expr), cronError(expr, `${field} field`, value, JSON.stringify(expr)));
    });
  }
  test('the first wrong field is named when several are wrong', () => {
    assert.throws(() => parseCron('0 99 99 * * *'), cronError('', 'minute field "99"'));
  });
  test('a valid field is not blamed for another one (hour 25 next to a valid day-of-week)', () => {
    assert.throws(() => parseCron('0 0 25 * * MON'), (err: unknown) => isLeaseholdError(err) && !err.message.includes('day-of-week'));
  });
});

describe('field count, empty and non-string input', () => {
  for (const [expr, count] of [['* * * * *', 5], ['0 0 0 * * * 2026', 7], ['*', 1]] as const) {
    test(`${JSON.stringify(expr)}: six fields expected, ${count} given`, () => {
      assert.throws(() => parseCron(expr), cronError(expr, 'six fields', `got ${count}`));
    });
  }
  for (const expr of ['', '   ', '\t\n']) {
    test(`${JSON.stringify(expr)} is an empty expression`, () => {
      assert.throws(() => parseCron(expr), cronError(expr, 'empty'));
    });
  }
  for (const value of [undefined, null, 42, {}, ['0 0 * * * *']]) {
    test(`${JSON.stringify(value) ?? 'undefined'} is not a string`, () => {
      assert.throws(() => parseCron(value as unknown as string), cronError(value, 'expected a string'));
    });
  }
  test('an unknown macro is named', () => {
    assert.throws(() => parseCron('@reboot'), cronError('@reboot', '"@reboot"', 'unknown macro'));
  });
  test('a macro followed by more text is an unknown macro', () => {
    assert.throws(() => parseCron('@daily 0'), cronError('@daily 0', 'unknown macro'));
  });
});

describe('zones', () => {
  const originalTz = process.env.TZ;
  afterEach(() => {
    if (originalTz === undefined) delete process.env.TZ;
    else process.env.TZ = originalTz;
  });

  test('the default zone is UTC, whatever the process zone', () => {
    process.env.TZ = 'Asia/Tokyo';
    const schedule = parseCron('0 0 12 * * *');
    assert.equal(schedule.zone, 'UTC');
    assert.equal(schedule.next(new Date('2026-05-05T00:00:00Z'))?.toISOString(), '2026-05-05T12:00:00.000Z');
  });
  test('expression and zone are kept on the schedule', () => {
    const schedule = parseCron('  0 0 12 * * *  ', { zone: 'europe/berlin' });
    assert.equal(schedule.expression, '0 0 12 * * *');
    assert.equal(schedule.zone, 'Europe/Berlin');
  });
  test('a fixed offset +02:00 is two hours ahead of UTC', () => {
    assert.equal(parseCron('0 0 12 * * *', { zone: '+02:00' }).next(new Date('2026-05-05T00:00:00Z'))?.toISOString(), '2026-05-05T10:00:00.000Z');
  });
  test('a fixed offset -05:30 is five and a half hours behind UTC', () => {
    assert.equal(parseCron('0 0 12 * * *', { zone: '-05:30' }).next(new Date('2026-05-05T00:00:00Z'))?.toISOString(), '2026-05-05T17:30:00.000Z');
  });
  test('a day boundary in a fixed offset is local: 0 0 0 * * MON at +14:00', () => {
    assert.equal(parseCron('0 0 0 * * MON', { zone: '+14:00' }).next(new Date('2026-05-05T00:00:00Z'))?.toISOString(), '2026-05-10T10:00:00.000Z');
  });
  test('UTC, Z, utc and +00:00 are the same zone', () => {
    for (const zone of ['UTC', 'Z', 'utc', '+00:00', '-00:00', 'Etc/UTC']) {
      assert.equal(parseCron('0 0 12 * * *', { zone }).zone, 'UTC', zone);
    }
  });
  test('an unknown zone is an invalidZone error naming it, at parse time', () => {
    assert.throws(() => parseCron('0 0 12 * * *', { zone: 'Mars/Olympus_Mons' }), (err: unknown) => isLeaseholdError(err, 'invalidZone') && err.message.includes('Mars/Olympus_Mons'));
  });
  test('validateZone normalises', () => {
    assert.equal(validateZone('Z'), 'UTC');
    assert.equal(validateZone('+05:30'), '+05:30');
    assert.equal(validateZone('-00:00'), 'UTC');
    assert.equal(validateZone('europe/berlin'), 'Europe/Berlin');
    assert.equal(validateZone('America/New_York'), 'America/New_York');
  });
  for (const zone of ['', 'Europe/Berlin ', 'Nowhere/City', '+15:00', '+05:60', '+5:00', '0200', 'UTC+2']) {
    test(`validateZone(${JSON.stringify(zone)}) is invalidZone naming the zone`, () => {
      assert.throws(() => validateZone(zone), (err: unknown) => isLeaseholdError(err, 'invalidZone') && err.message.includes(JSON.stringify(zone)));
    });
  }
  test('validateZone of a non-string is invalidZone', () => {
    assert.throws(() => validateZone(7 as unknown as string), (err: unknown) => isLeaseholdError(err, 'invalidZone'));
  });
  test('the same expression in the same zone parses to the same immutable schedule', () => {
    assert.equal(parseCron('0 */5 * * * *', { zone: 'Europe/Berlin' }), parseCron(' 0 */5 * * * * ', { zone: 'europe/berlin' }));
    assert.notEqual(parseCron('0 */5 * * * *', { zone: 'Europe/Berlin' }), parseCron('0 */5 * * * *'));
  });
  test('next() of an invalid date is an error, not a silent null', () => {
    assert.throws(() => parseCron('* * * * * *').next(new Date(Number.NaN)), (err: unknown) => isLeaseholdError(err));
  });
});

describe('an expression that does not parse is parsed once', () => {
  test('asked again, it fails with the same error, and its maker is not run again', () => {
    let made = 0;
    const key = `cron test\nbroken ${Math.random()}`;
    const make = (): object => {
      made++;
      throw new Error('not a schedule');
    };
    assert.throws(() => remember(key, make), /^Error: not a schedule$/);
    assert.throws(() => remember(key, make), /^Error: not a schedule$/);
    assert.equal(made, 1, 'a status read meets a stored expression that does not parse at every read of its job: it is not parsed each time');
  });

  test('parseCron answers the same invalidCron error every time', () => {
    for (let i = 0; i < 3; i++) assert.throws(() => parseCron('0 0 25 * * *'), cronError('0 0 25 * * *', 'hour', '25'));
  });
});
