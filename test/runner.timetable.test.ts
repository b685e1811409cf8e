/**
 * The timetable with an injected clock (SPEC 3.1, 3.2): one timer, grids, no overlap, no
 * burst, fixedDelay after the end, initialDelay, pause and invalid settings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRunner, type RunEndedEvent, type SkippedEvent, type RunStartedEvent } from '../src/index.js';
import { Scheduler } from '../src/runner/runner.js';
import { ManualClock, deferred } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';

const T0 = Date.parse('2026-03-02T10:00:00.000Z');

function setup(start = T0) {
  const clock = new ManualClock(start);
  const { logger, lines } = memoryLogger();
  const runner = createRunner({ local: true, clock, logger, instanceId: 'node-a', shutdownGrace: 0 });
  const started: RunStartedEvent[] = [];
  const ended: RunEndedEvent[] = [];
  const skipped: SkippedEvent[] = [];
  runner.on('runStarted', (e) => started.push(e));
  runner.on('runEnded', (e) => ended.push(e));
  runner.on('skipped', (e) => skipped.push(e));
  return { clock, runner, started, ended, skipped, lines };
}

const iso = (ms: number) => new Date(ms).toISOString();

test('a cron job fires on its ticks, with scheduledAt equal to the tick (SPEC 2, 3.1)', async () => {
  const { clock, runner, started, ended } = setup(T0 + 3_000);
  runner.add({ id: 'every-10s', cron: '*/10 * * * * *', run: () => {} });
  await runner.start();
  await clock.advance(35_000);
  assert.deepEqual(started.map((e) => iso(e.scheduledAt)), ['2026-03-02T10:00:10.000Z', '2026-03-02T10:00:20.000Z', '2026-03-02T10:00:30.000Z']);
  assert.deepEqual(started.map((e) => e.lagMs), [0, 0, 0]);
  assert.deepEqual(ended.map((e) => e.outcome), ['succeeded', 'succeeded', 'succeeded']);
  await runner.stop();
});

test('runner.jobs() gives times as ISO-8601 strings, as the status does; the events carry epoch ms', async () => {
  const { clock, runner, started } = setup(T0 + 3_000);
  const gate = deferred();
  const added = runner.add({ id: 'every-10s', cron: '*/10 * * * * *', run: () => gate.promise });
  assert.equal(added.nextDueAt, null, 'nothing is planned before the start');
  await runner.start();
  assert.equal(runner.jobs()[0]?.nextDueAt, '2026-03-02T10:00:10.000Z');
  await clock.advance(7_000);
  assert.equal(started[0]?.scheduledAt, T0 + 10_000);
  const job = runner.jobs()[0];
  assert.deepEqual([job?.running?.startedAt, job?.running?.aborted, job?.nextDueAt], ['2026-03-02T10:00:10.000Z', undefined, '2026-03-02T10:00:20.000Z']);
  gate.resolve();
  await runner.stop();
});

test('one timer drives many jobs', async () => {
  const { clock, runner, started } = setup();
  for (let i = 0; i < 50; i++) runner.add({ id: `job-${i}`, fixedRate: 1_000 + i * 10, initialDelay: '1s', run: () => {} });
  await runner.start();
  assert.equal(clock.armed, 1, 'one timer armed for fifty jobs');
  await clock.advance(1_500);
  assert.equal(clock.armed, 1);
  assert.ok(started.length >= 50);
  await runner.stop();
  assert.equal(clock.armed, 0, 'stop() disarms the timer');
});

test('a long wait is split into timer waits of at most 30 s (clock re-read on wake)', async () => {
  const { clock, runner, started } = setup(T0);
  runner.add({ id: 'daily', cron: '0 0 11 * * *', run: () => {} });
  await runner.start();
  const seen: number[] = [];
  // The runner arms at most 30 s ahead; after each wake one timer is armed again.
  for (let i = 0; i < 4; i++) {
    await clock.advance(30_000);
    seen.push(clock.armed);
  }
  assert.deepEqual(seen, [1, 1, 1, 1]);
  await clock.advance(3_600_000);
  assert.deepEqual(started.map((e) => iso(e.scheduledAt)), ['2026-03-02T11:00:00.000Z']);
  await runner.stop();
});

test('overrun: a fixedRate job never overlaps, skips are counted, and it resumes on its grid without a burst (SPEC 3.2)', async () => {
  const { clock, runner, started, skipped } = setup();
  const gate = deferred();
  let calls = 0;
  runner.add({
    id: 'slow',
    fixedRate: '1s',
    async run() {
      calls++;
      if (calls === 1) await gate.promise;
    },
  });
  await runner.start();
  await clock.advance(3_500); // grid: 0 (run), 1000, 2000, 3000 skipped
  assert.equal(calls, 1);
  assert.deepEqual(skipped.map((s) => [s.reason, s.scheduledAt - T0]), [['overrun', 1000], ['overrun', 2000], ['overrun', 3000]]);
  gate.resolve();
  await clock.advance(100); // ended at 3600: nothing runs to catch up
  assert.equal(calls, 1, 'no burst after the overrun');
  await clock.advance(400);
  assert.equal(calls, 2);
  assert.equal(started[1]?.scheduledAt, T0 + 4_000, 'next start is the first grid point after the end');
  await runner.stop();
});

test('overrun on a cron job: ticks during the run are skipped, not queued', async () => {
  const { clock, runner, started, skipped } = setup(T0);
  const gate = deferred();
  let calls = 0;
  runner.add({ id: 'c', cron: '* * * * * *', async run() { calls++; if (calls === 1) await gate.promise; } });
  await runner.start();
  await clock.advance(5_500);
  assert.equal(calls, 1);
  assert.equal(skipped.filter((s) => s.reason === 'overrun').length, 4);
  gate.resolve();
  await clock.advance(1_000);
  assert.equal(calls, 2);
  assert.equal(started[1]?.scheduledAt, T0 + 6_000);
  await runner.stop();
});

test('fixedDelay waits the delay after each run ends; initialDelay delays the first run (SPEC 3.2)', async () => {
  const { clock, runner, started } = setup();
  let release = deferred();
  runner.add({ id: 'd', fixedDelay: '2s', initialDelay: '5s', async run() { await release.promise; } });
  await runner.start();
  await clock.advance(4_999);
  assert.equal(started.length, 0, 'initialDelay holds the first run');
  await clock.advance(1);
  assert.equal(started.length, 1);
  await clock.advance(3_000); // running from 5000 to 8000
  const r1 = release;
  release = deferred();
  r1.resolve();
  await clock.advance(1_999);
  assert.equal(started.length, 1, 'not before the delay after the end');
  await clock.advance(1);
  assert.equal(started.length, 2);
  assert.equal(started[1]?.scheduledAt, T0 + 10_000);
  release.resolve();
  await runner.stop();
});

test('without initialDelay a fixedRate job runs as soon as the node starts', async () => {
  const { clock, runner, started } = setup();
  runner.add({ id: 'r', fixedRate: '1m', run: () => {} });
  await runner.start();
  await clock.advance(0);
  assert.equal(started.length, 1);
  assert.equal(started[0]?.scheduledAt, T0);
  await runner.stop();
});

test('a job that throws is failed, and the next run still happens', async () => {
  const { clock, runner, ended } = setup();
  let n = 0;
  runner.add({ id: 'f', fixedRate: '1s', run() { n++; if (n <= 2) throw new Error(`boom ${n}`); } });
  await runner.start();
  await clock.advance(2_500);
  assert.deepEqual(ended.map((e) => [e.outcome, e.error]), [['failed', 'boom 1'], ['failed', 'boom 2'], ['succeeded', undefined]]);
  await runner.stop();
});

test('a failing streak logs the first failure and the recovery, not every repeat (SPEC 3.5)', async () => {
  const { clock, runner, lines } = setup();
  let n = 0;
  runner.add({ id: 'flaky', fixedRate: '1s', run() { n++; if (n <= 4) throw new Error('db down'); } });
  await runner.start();
  await clock.advance(5_500);
  const warns = lines.filter((l) => l['level'] === 40 && l['jobId'] === 'flaky');
  const infos = lines.filter((l) => l['level'] === 30 && l['jobId'] === 'flaky' && String(l['msg']).includes('recovered'));
  assert.equal(warns.length, 1, 'one warning for four failures');
  assert.match(String(warns[0]?.['msg']), /db down/);
  assert.equal(infos.length, 1);
  await runner.stop();
});

test('settings: a paused job skips with reason paused, and resumes on refresh', async () => {
  const clock = new ManualClock(T0);
  const { logger } = memoryLogger();
  const overrides: Record<string, string> = { paused: 'true' };
  const core = new Scheduler({ instanceId: 'n', logger, shutdownGraceMs: 0, clock, settings: { get: () => ({ ...overrides }) } });
  const runs: number[] = [];
  const skips: string[] = [];
  core.on('runStarted', (e) => runs.push(e.scheduledAt - T0));
  core.on('skipped', (e) => skips.push(e.reason));
  core.add({ id: 'p', fixedRate: '1s', run: () => {} });
  core.start();
  await clock.advance(2_500);
  assert.deepEqual(runs, []);
  assert.deepEqual(skips, ['paused', 'paused', 'paused']);
  assert.equal(core.job('p')?.state, 'paused');
  overrides['paused'] = 'false';
  core.refresh('p');
  await clock.advance(1_000);
  assert.deepEqual(runs, [3_000]);
  await core.stop();
});

test('settings: a new cadence applies at the next fire; a bad one marks the job invalidSchedule and a fix recovers it', async () => {
  const clock = new ManualClock(T0);
  const { logger } = memoryLogger();
  const overrides: Record<string, string> = {};
  const core = new Scheduler({ instanceId: 'n', logger, shutdownGraceMs: 0, clock, settings: { get: () => ({ ...overrides }) } });
  const runs: number[] = [];
  const states: string[] = [];
  core.on('runStarted', (e) => runs.push(e.scheduledAt - T0));
  core.on('jobState', (e) => states.push(`${e.state}${e.cause ? `: ${e.cause}` : ''}`));
  core.add({ id: 'x', cron: '0 * * * * *', run: () => {} });
  core.start();
  overrides['cron'] = '*/10 * * * * *';
  await clock.advance(60_000); // the pending fire at :00 of the next minute re-reads settings
  overrides['cron'] = '0 0 25 * * *';
  await clock.advance(10_000);
  assert.equal(core.job('x')?.state, 'invalidSchedule');
  assert.match(states.at(-1) ?? '', /invalidSchedule: .*hour/);
  overrides['cron'] = '*/30 * * * * *';
  await clock.advance(60_000); // re-checked within a minute
  assert.equal(core.job('x')?.state, 'ok');
  await clock.advance(30_000);
  assert.ok(runs.includes(60_000), `runs ${runs.join(',')}`);
  assert.ok(runs.some((r) => r > 70_000 && (r % 30_000) === 0), `runs again on the fixed cadence: ${runs.join(',')}`);
  await core.stop();
});

test('an environment setting that holds a bad value marks only that job invalid', async () => {
  const clock = new ManualClock(T0);
  const { logger } = memoryLogger();
  process.env['LH_TEST_RATE'] = 'soon';
  const core = new Scheduler({ instanceId: 'n', logger, shutdownGraceMs: 0, clock });
  const { fromEnv } = await import('../src/index.js');
  let good = 0;
  core.add({ id: 'bad-env', fixedRate: fromEnv('LH_TEST_RATE', '1s'), run: () => {} });
  core.add({ id: 'good', fixedRate: '1s', run: () => { good++; } });
  core.start();
  await clock.advance(2_000);
  assert.equal(core.job('bad-env')?.state, 'invalidSchedule');
  assert.match(core.job('bad-env')?.invalidCause ?? '', /fixedRate.*"soon"/);
  assert.ok(good >= 2);
  process.env['LH_TEST_RATE'] = '500ms';
  await clock.advance(61_000);
  assert.equal(core.job('bad-env')?.state, 'ok');
  delete process.env['LH_TEST_RATE'];
  await core.stop();
});

test('fromEnv settings are read in the environment the settings source hands in, at every fire', async () => {
  const clock = new ManualClock(T0);
  const { logger } = memoryLogger();
  const env: Record<string, string | undefined> = { LH_GIVEN_RATE: '2s', LH_GIVEN_CRON: 'not a cron' };
  assert.equal(process.env['LH_GIVEN_RATE'], undefined);
  const core = new Scheduler({ instanceId: 'n', logger, shutdownGraceMs: 0, clock, settings: { get: () => ({}), env } });
  const { fromEnv } = await import('../src/index.js');
  const starts: number[] = [];
  core.add({ id: 'given', fixedRate: fromEnv('LH_GIVEN_RATE', '1s'), run: () => { starts.push(clock.now() - T0); } });
  core.add({ id: 'bad', cron: fromEnv('LH_GIVEN_CRON', '0 0 * * * *'), run: () => {} });
  core.start();
  await clock.advance(4_500);
  assert.deepEqual(starts, [0, 2_000, 4_000], 'the period from the given environment, not the default');
  assert.equal(core.job('bad')?.state, 'invalidSchedule');
  assert.deepEqual(core.job('bad')?.declared, { kind: 'cron', value: 'not a cron', zone: undefined }, 'the status describes the value it was given');
  env['LH_GIVEN_RATE'] = '500ms';
  await clock.advance(2_600);
  assert.deepEqual(starts.filter((t) => t > 4_500), [6_000, 6_500, 7_000], 'a change applies at the next fire');
  await core.stop();
});

test('a zone from the environment with a bad value marks the job invalidSchedule and never stops registration (SPEC 1)', async () => {
  const clock = new ManualClock(T0);
  const { logger } = memoryLogger();
  process.env['LH_TEST_ZONE'] = 'Mars/Olympus';
  const core = new Scheduler({ instanceId: 'n', logger, shutdownGraceMs: 0, clock });
  const { fromEnv } = await import('../src/index.js');
  const runs: number[] = [];
  core.add({ id: 'zoned', cron: '*/10 * * * * *', zone: fromEnv('LH_TEST_ZONE', 'Europe/Berlin'), run: () => { runs.push(clock.now()); } });
  core.start();
  await clock.advance(20_000);
  assert.equal(core.job('zoned')?.state, 'invalidSchedule');
  assert.match(core.job('zoned')?.invalidCause ?? '', /Mars\/Olympus/);
  assert.deepEqual(runs, []);
  process.env['LH_TEST_ZONE'] = 'Asia/Tokyo';
  await clock.advance(61_000);
  assert.equal(core.job('zoned')?.state, 'ok');
  assert.ok(runs.length >= 1, `runs after the fix: ${runs.length}`);
  delete process.env['LH_TEST_ZONE'];
  // A literal bad zone in code still fails at registration, naming the field.
  assert.throws(() => core.add({ id: 'literal', cron: '0 * * * * *', zone: 'Mars/Olympus', run: () => {} }), /job "literal": field "zone"/);
  await core.stop();
});

test('an installation job without Redis runs on this node alone, with a fencing token', async () => {
  const { clock, runner, started } = setup();
  runner.add({ id: 'inst', scope: 'installation', fixedRate: '1s', initialDelay: '1s', run: () => {} });
  await runner.start();
  await clock.advance(3_100);
  assert.deepEqual(started.map((e) => e.scheduledAt - T0), [1_000, 2_000, 3_000]);
  assert.deepEqual(started.map((e) => e.fencingToken), [1, 2, 3]);
  await runner.stop();
});

test('add() rejects a bad definition or a duplicate id with an error naming the job and field', () => {
  const { runner } = setup();
  runner.add({ id: 'a', fixedRate: 1000, run: () => {} });
  assert.throws(() => runner.add({ id: 'a', fixedRate: 1000, run: () => {} }), { code: 'duplicateJob', message: /job "a": field "id"/ });
  assert.throws(() => runner.add({ id: 'b', cron: '0 0 25 * * *', run: () => {} }), { message: /job "b": field "cron".*hour/ });
});

test('a tick of a thousand jobs is handled in slices, with the event loop free between them (I/O waits for one slice, not the tick)', async () => {
  const { logger } = memoryLogger();
  const runner = createRunner({ local: true, logger, instanceId: 'node-a', shutdownGrace: 0 });
  const start = Math.ceil((Date.now() + 1_500) / 1_000) * 1_000;
  for (let i = 0; i < 1_000; i++) runner.add({ id: `job-${i}`, cron: `${new Date(start).getUTCSeconds()} * * * * *`, run: () => {} });
  // Starts seen at each turn of the event loop (setImmediate runs once per turn, after I/O).
  const perTurn: number[] = [];
  let count = 0;
  runner.on('runStarted', () => count++);
  await runner.start();
  const turns = new Promise<void>((resolve) => {
    const turn = (): void => {
      perTurn.push(count);
      if (count >= 1_000 || Date.now() > start + 5_000) resolve();
      else setImmediate(turn);
    };
    turn();
  });
  await turns;
  await runner.stop();
  const deltas = perTurn.map((c, i) => c - (perTurn[i - 1] ?? 0)).filter((d) => d > 0);
  assert.equal(count, 1_000, 'every job ran on the tick');
  assert.ok(deltas.length >= 5, `the thousand starts came in ${deltas.length} turn(s): ${deltas.join(', ')}`);
  assert.ok(Math.max(...deltas) <= 200, `at most 200 starts in one turn: ${deltas.join(', ')}`);
});
