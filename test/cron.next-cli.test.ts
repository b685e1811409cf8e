/**
 * `leasehold next "<expr>" [--zone Z] [--from ISO] [-n N]` (SPEC 2): the next N
 * fire times, one ISO-8601 timestamp with the zone's offset per line; a wrong
 * expression, zone, --from, -n or option exits 2 with one line naming it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runNext } from '../src/cli/next.js';

const clock = { now: () => Date.parse('2026-03-07T12:00:00Z') };

describe('leasehold next: output', () => {
  test('five fire times by default, in the zone, with its offset, skipping the spring-forward night', () => {
    const r = runNext(['0 30 2 * * *', '--zone', 'America/New_York'], clock);
    assert.equal(r.code, 0);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout, [
      '2026-03-09T02:30:00-04:00', '2026-03-10T02:30:00-04:00', '2026-03-11T02:30:00-04:00',
      '2026-03-12T02:30:00-04:00', '2026-03-13T02:30:00-04:00', '',
    ].join('\n'));
  });
  test('the default zone is UTC, printed as +00:00', () => {
    assert.deepEqual(runNext(['@hourly', '-n', '2'], clock), { code: 0, stdout: '2026-03-07T13:00:00+00:00\n2026-03-07T14:00:00+00:00\n', stderr: '' });
  });
  test('--from with an offset is that instant; -n sets the count', () => {
    const r = runNext(['0 */15 * * * *', '--zone', 'Europe/Berlin', '--from', '2026-10-25T00:20:00Z', '-n', '3'], clock);
    assert.equal(r.stdout, '2026-10-25T02:30:00+02:00\n2026-10-25T02:45:00+02:00\n2026-10-25T03:00:00+01:00\n');
  });
  test('--from without an offset is a local time in the zone', () => {
    const r = runNext(['0 0 12 * * *', '--zone', '+05:30', '--from', '2026-01-01T12:00', '-n', '1'], clock);
    assert.equal(r.stdout, '2026-01-02T12:00:00+05:30\n');
  });
  test('--from as a date only is local midnight', () => {
    const r = runNext(['0 0 0 * * *', '--zone', 'America/New_York', '--from', '2026-07-04', '-n', '1'], clock);
    assert.equal(r.stdout, '2026-07-05T00:00:00-04:00\n');
  });
  test('an expression with no fire time prints nothing and says so, exit 0', () => {
    const r = runNext(['0 0 0 31 6 *'], clock);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /no fire time after 2026-03-07T12:00:00\+00:00/);
  });
});

describe('leasehold next: exit 2 with one line naming the problem', () => {
  const cases: ReadonlyArray<readonly [name: string, argv: string[], pattern: RegExp]> = [
    ['wrong field', ['0 0 25 * * *'], /hour field "25"/],
    ['wrong field count', ['* * * * *'], /six fields.*got 5/],
    ['unknown zone', ['* * * * * *', '--zone', 'Mars/Olympus'], /zone "Mars\/Olympus"/],
    ['bad --from', ['* * * * * *', '--from', 'yesterday'], /--from "yesterday"/],
    ['impossible --from', ['* * * * * *', '--from', '2026-02-30T00:00:00Z'], /--from "2026-02-30T00:00:00Z" is not a valid date-time/],
    ['-n zero', ['* * * * * *', '-n', '0'], /-n "0"/],
    ['-n not a number', ['* * * * * *', '-n', 'five'], /-n "five"/],
    ['unknown option', ['* * * * * *', '--bogus'], /--bogus/],
    ['missing option value', ['* * * * * *', '--zone'], /--zone/],
    ['missing expression', [], /missing cron expression/],
    ['unquoted expression', ['0', '0', '*', '*', '*', '*'], /quote the expression/],
  ];
  for (const [name, argv, pattern] of cases) {
    test(name, () => {
      const r = runNext(argv, clock);
      assert.equal(r.code, 2);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, pattern);
      assert.match(r.stderr, /^leasehold next: [^\n]*\n$/);
    });
  }
});
