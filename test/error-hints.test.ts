/**
 * Errors that say how to fix what they report: a five-field (Unix) cron gets the six-field
 * form, `leasehold check` names every wrong `defineJob` of a module (not only the first that
 * stopped it loading), and a decorated class whose name looks minified gets a warning. The CLI
 * cases run the built CLI: `npm run build` first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Scheduled, createRunner, defineJob, isLeaseholdError, parseCron, parseDuration } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold } from './helpers/node.js';

const invalidCron = (...parts: string[]) => (err: unknown): boolean => {
  assert.ok(isLeaseholdError(err, 'invalidCron'), String(err));
  for (const p of parts) assert.ok(err.message.includes(p), `${JSON.stringify(err.message)} lacks ${JSON.stringify(p)}`);
  return true;
};

test('a five-field cron is answered with its six-field form, seconds first', () => {
  assert.throws(() => parseCron('*/5 * * * *'), invalidCron('got 5', 'a five-field (Unix) cron has no seconds field', 'use "0 */5 * * * *"'));
  assert.throws(() => parseCron('30 2 * * MON-FRI'), invalidCron('use "0 30 2 * * MON-FRI"'));
  assert.throws(
    () => defineJob({ id: 'digest', cron: '0 8 * * *', run: () => undefined }),
    invalidCron('job "digest": field "cron"', 'use "0 0 8 * * *"'),
  );
});

test('a five-field cron that restricts both day fields is told that both must match here', () => {
  // Unix cron runs "0 12 13 * 5" on the 13th and on every Friday; Spring's rule, on Friday the 13th.
  assert.throws(() => parseCron('0 12 13 * 5'), invalidCron('use "0 0 12 13 * 5"', 'a day must match both day fields'));
  assert.throws(() => parseCron('0 12 * * 5'), (err) => invalidCron('use "0 0 12 * * 5"')(err) && !String((err as Error).message).includes('both day fields'));
});

test('a five-field cron whose six-field form is wrong too gets no suggestion that would fail', () => {
  assert.throws(() => parseCron('0 25 * * *'), (err) => invalidCron('got 5', 'seconds first')(err) && !/use "/.test((err as Error).message));
});

test('a duration with its unit spelled out is answered with the way to write it', () => {
  assert.throws(() => parseDuration('5 min'), (err) => isLeaseholdError(err, 'invalidDuration') && /"5 min" is not a duration \(use "5m"; /.test(err.message));
  assert.throws(() => parseDuration('30 seconds'), /use "30s"/);
  assert.throws(() => parseDuration('soon'), (err) => isLeaseholdError(err, 'invalidDuration') && !/use "/.test(err.message));
});

test('leasehold check names every wrong defineJob of a module, not only the first, and exits 1', async () => {
  const r = await runLeasehold(['check', 'test/fixtures/jobs-define-invalid.mjs']);
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 2, r.stderr);
  assert.match(lines[0] ?? '', /^test\/fixtures\/jobs-define-invalid\.mjs: job "unix-cron": field "cron": .*use "0 \*\/5 \* \* \* \*"/);
  assert.match(lines[1] ?? '', /^test\/fixtures\/jobs-define-invalid\.mjs: job "spaced": field "fixedRate": .*"5 min" is not a duration .*use "5m"/);
  assert.doesNotMatch(r.stderr, /failed to load/);
});

test('leasehold start names every wrong defineJob too and starts nothing', async () => {
  const r = await runLeasehold(['start', '--jobs', 'test/fixtures/jobs-define-invalid.mjs', '--port', '0']);
  assert.equal(r.code, 2, `the first error's exit status (invalidCron: a usage error): ${r.stderr}`);
  assert.doesNotMatch(r.stdout, /runner started/);
  assert.match(r.stderr, /job "unix-cron"/);
  assert.match(r.stderr, /job "spaced"/);
});

test('a decorated class with a one- or two-character name is warned about, naming explicit ids and keep-names', async () => {
  const log = memoryLogger('info');
  const runner = createRunner({ logger: log.logger });
  class b {
    @Scheduled({ fixedRate: '1m' })
    tick(): void {}
  }
  class Xy {
    @Scheduled({ id: 'explicit', fixedRate: '1m' })
    tick(): void {}
  }
  runner.register(new b());
  runner.register(new Xy());
  const warnings = log.lines.filter((l) => l['level'] === 40 && /minified/.test(String(l['msg'])));
  assert.equal(warnings.length, 1, JSON.stringify(log.lines));
  const msg = String(warnings[0]?.['msg']);
  assert.match(msg, /class "b"/);
  assert.match(msg, /"b\.tick"/);
  assert.match(msg, /explicit id/);
  assert.match(msg, /keep-names|keepNames|keep_classnames/);
  assert.deepEqual(runner.jobs().map((j) => j.id).sort(), ['b.tick', 'explicit'], 'the jobs are registered all the same');
  await runner.stop();
});

test('leasehold check warns about a minified class name and still exits 0', async () => {
  const r = await runLeasehold(['check', 'test/fixtures/decorated-minified.ts']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /3 jobs? ok|ok/);
  const warnings = r.stderr.trim().split('\n');
  assert.equal(warnings.length, 1, r.stderr);
  assert.match(warnings[0] ?? '', /^test\/fixtures\/decorated-minified\.ts: warning: class "a": .*minified/);
});
