/**
 * Job definitions (SPEC 1): checks at registration, errors naming the job and the field.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineJob, fromEnv, parseDuration, LeaseholdError } from '../src/index.js';
import { normalizeJob } from '../src/schedule/job.js';
import { checkJobs, normalizeJobs } from '../src/schedule/job-list.js';
import { readDuration } from '../src/schedule/duration.js';

const run = () => {};

test('durations: milliseconds or 500ms / 10s / 5m / 1h', () => {
  assert.equal(readDuration(250, 'x'), 250);
  assert.equal(readDuration('500ms', 'x'), 500);
  assert.equal(readDuration('10s', 'x'), 10_000);
  assert.equal(readDuration('5m', 'x'), 300_000);
  assert.equal(readDuration('1h', 'x'), 3_600_000);
  assert.equal(readDuration('1.5s', 'x'), 1_500);
  assert.equal(readDuration('0', 'x', true), 0);
  for (const bad of ['-1s', '10 parsecs', '', 's', 'NaN', -5, Infinity, null, {}, '30d']) {
    assert.throws(() => readDuration(bad, 'job "j": timeout'), (e: unknown) => e instanceof LeaseholdError && e.code === 'invalidDuration' && e.message.startsWith('job "j": timeout'), String(bad));
  }
  assert.throws(() => readDuration(0, 'period'), /more than zero/);
});

test('the public parseDuration takes a duration alone: zero or more milliseconds, or an error naming the value', () => {
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration(250), 250);
  assert.equal(parseDuration('0'), 0, 'zero is a duration');
  assert.equal(parseDuration('1d'), 86_400_000);
  for (const bad of ['5 min', '-1s', '', '30d', -5]) {
    assert.throws(() => parseDuration(bad), (e: unknown) => e instanceof LeaseholdError && e.code === 'invalidDuration' && e.message.startsWith(`duration: ${JSON.stringify(bad)}`), String(bad));
  }
});

test('defineJob returns its argument; a plain object is a valid job too', () => {
  const job = { id: 'digest', scope: 'installation' as const, cron: '0 0 8 * * *', zone: 'Europe/Berlin', lease: '1m' as const, run };
  assert.equal(defineJob(job), job);
  const n = normalizeJob({ id: 'plain', fixedDelay: '5s', initialDelay: '1s', timeout: '2m', run });
  assert.deepEqual([n.scope, n.schedule.kind, n.initialDelayMs, n.timeoutMs], ['instance', 'fixedDelay', 1000, 120_000]);
});

const cases: Array<[string, Record<string, unknown>, RegExp]> = [
  ['unknown key', { id: 'j', cron: '* * * * * *', retries: 3, run }, /job "j": field "retries": unknown field/],
  ['no schedule', { id: 'j', run }, /job "j": .*no schedule/],
  ['two schedules', { id: 'j', cron: '* * * * * *', fixedRate: 1000, run }, /job "j": field "fixedRate": two schedules/],
  ['bad cron', { id: 'j', cron: '0 0 25 * * *', run }, /job "j": field "cron": .*hour/],
  ['unknown zone', { id: 'j', cron: '0 0 * * * *', zone: 'Mars/Olympus', run }, /job "j": field "zone": .*Mars\/Olympus/],
  ['zone without cron', { id: 'j', fixedRate: '1s', zone: 'UTC', run }, /job "j": field "zone": .*cron/],
  ['negative duration', { id: 'j', fixedRate: -1000, run }, /job "j": field "fixedRate"/],
  ['zero period', { id: 'j', fixedDelay: 0, run }, /job "j": field "fixedDelay": .*more than zero/],
  ['bad timeout', { id: 'j', fixedRate: 1000, timeout: '-2m', run }, /job "j": field "timeout"/],
  ['lease on an instance job', { id: 'j', fixedRate: 1000, lease: '30s', run }, /job "j": field "lease": .*installation/],
  ['bad scope', { id: 'j', fixedRate: 1000, scope: 'global', run }, /job "j": field "scope"/],
  ['no handler', { id: 'j', fixedRate: 1000 }, /job "j": field "run"/],
  ['bad id', { id: 'has space', fixedRate: 1000, run }, /field "id"/],
  ['initialDelay on cron', { id: 'j', cron: '* * * * * *', initialDelay: '1s', run }, /job "j": field "initialDelay"/],
];
for (const [name, def, message] of cases) {
  test(`rejected at registration: ${name}`, () => {
    assert.throws(() => normalizeJob(def), (e: unknown) => e instanceof LeaseholdError && message.test(e.message));
  });
}

test('a duplicate id is rejected; checkJobs reports every problem at once', () => {
  assert.throws(() => normalizeJobs([{ id: 'a', fixedRate: 1, run }, { id: 'a', fixedRate: 1, run }]), { code: 'duplicateJob' });
  const errors = checkJobs([{ id: 'a', fixedRate: 1, run }, { id: 'a', fixedRate: 1, run }, { id: 'b', run }, 'nope']);
  assert.equal(errors.length, 3);
  assert.match(errors[0] ?? '', /"a".*same id/);
  assert.match(errors[1] ?? '', /"b"/);
  assert.match(errors[2] ?? '', /must be an object/);
});

test('a schedule from the environment: the default is checked at registration, the live value at each fire', () => {
  const n = normalizeJob({ id: 'e', fixedRate: fromEnv('SOME_RATE', '10s'), run });
  assert.equal(n.schedule.kind, 'fixedRate');
  assert.throws(() => normalizeJob({ id: 'e', fixedRate: fromEnv('SOME_RATE', 'often'), run }), /job "e": field "fixedRate"/);
  assert.throws(() => fromEnv('not a name', '1s'), /environment variable name/);
});
