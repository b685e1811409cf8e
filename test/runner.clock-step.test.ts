/**
 * A node without Redis whose wall clock steps keeps its jobs on time: the step is detected
 * against the monotonic clock and every job is planned again, once. Cron jobs fire at their
 * ticks in the new wall time; after a backward step no tick already run runs again; after a
 * forward step the skipped ticks do not run in a burst; fixedRate keeps its period in elapsed
 * time. (With Redis the schedule keeps Redis time: see the clock-step chaos scenario.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRunner, type ClockStepEvent, type RunStartedEvent } from '../src/index.js';
import { ManualClock } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';
import { StepDetector } from '../src/runner/steps.js';

const T0 = Date.parse('2026-03-02T10:00:00.000Z');
const HOUR = 3_600_000;

/** A manual clock whose wall time can step while its monotonic time (and timers) go on. */
class SteppingClock extends ManualClock {
  private offset = 0;
  private pendingStep: number | undefined;
  override monotonic(): number {
    return super.now();
  }
  step(ms: number): void {
    this.offset += ms;
  }
  /**
   * Steps the wall clock right after its next reading: a step that lands between two readings
   * of one wake (a process descheduled there, on a busy machine).
   */
  stepAfterNextRead(ms: number): void {
    this.pendingStep = ms;
  }
  override now(): number {
    const wall = super.now() + this.offset;
    this.offset += this.pendingStep ?? 0;
    this.pendingStep = undefined;
    return wall;
  }
}

function setup() {
  const clock = new SteppingClock(T0);
  const { logger, lines } = memoryLogger();
  const runner = createRunner({ clock, logger, instanceId: 'n', shutdownGrace: 0 });
  const started: RunStartedEvent[] = [];
  const startedMono: Array<[string, number]> = [];
  const steps: ClockStepEvent[] = [];
  runner.on('runStarted', (e) => {
    started.push(e);
    startedMono.push([e.jobId, clock.monotonic()]);
  });
  runner.on('clockStep', (e) => steps.push(e));
  return { clock, runner, started, startedMono, steps, lines };
}

const iso = (ms: number) => new Date(ms).toISOString().slice(11, 19);

test('stepped back an hour: the cron job fires on at its next ticks in the new time, once each; fixedRate keeps its pace', async () => {
  const { clock, runner, started, startedMono, steps, lines } = setup();
  runner.add({ id: 'cron', cron: '*/10 * * * * *', run: () => {} });
  runner.add({ id: 'rate', fixedRate: '3s', run: () => {} });
  await runner.start();
  await clock.advance(35_000); // cron at :10 :20 :30
  clock.step(-HOUR);
  await clock.advance(31_000);
  assert.equal(steps.length, 1);
  assert.ok(Math.abs((steps[0]?.stepMs ?? 0) + HOUR) < 1_000, `step ${steps[0]?.stepMs}`);
  const cron = started.filter((e) => e.jobId === 'cron').map((e) => iso(e.scheduledAt));
  // Before: 10:00:10, :20, :30. After the step (wall 09:00:35): 09:00:40, :50, 09:01:00.
  assert.deepEqual(cron, ['10:00:10', '10:00:20', '10:00:30', '09:00:40', '09:00:50', '09:01:00']);
  const rate = startedMono.filter(([id]) => id === 'rate').map(([, at]) => at);
  const gaps = rate.slice(1).map((t, i) => t - (rate[i] as number));
  assert.ok(gaps.every((g) => g === 3_000), `fixedRate gaps in elapsed time: ${gaps.join(',')}`);
  assert.ok(lines.some((l) => l['level'] === 40 && /wall clock stepped back by 1h/.test(String(l['msg']))), 'one warning with its size');
  assert.equal(lines.filter((l) => /wall clock stepped/.test(String(l['msg']))).length, 1);
  assert.match(await runner.metrics.metrics(), /^leasehold_clock_steps_total 1$/m, 'counted');
  await runner.stop();
});

test('stepped forward an hour: no burst of the skipped ticks, and the cron job goes on at its ticks', async () => {
  const { clock, runner, started } = setup();
  runner.add({ id: 'cron', cron: '*/10 * * * * *', run: () => {} });
  await runner.start();
  await clock.advance(15_000); // :10
  clock.step(HOUR);
  await clock.advance(30_000);
  assert.deepEqual(started.map((e) => iso(e.scheduledAt)), ['10:00:10', '11:00:20', '11:00:30', '11:00:40']);
  await runner.stop();
});

test('the detector tells a step from drift and from a late timer', () => {
  const d = new StepDetector();
  assert.equal(d.observe(1_000, 50), 0);
  assert.equal(d.observe(31_000, 30_050), 0, 'a timer that woke late moves both clocks');
  assert.equal(d.observe(31_400, 30_050), 0, 'drift under a second');
  assert.equal(d.observe(31_400 - HOUR, 30_060), -HOUR - 10);
  assert.equal(d.observe(31_410 - HOUR + 5_000, 30_070), 5_000);
});

test('stepped forward during a fixedDelay run: the next start is the delay after the end, not an hour later', async () => {
  const { clock, runner, startedMono } = setup();
  let finish: (() => void) | undefined;
  runner.add({ id: 'delay', fixedDelay: '1s', run: () => (startedMono.length === 1 ? new Promise<void>((r) => (finish = r)) : undefined) });
  await runner.start();
  await clock.advance(100);
  assert.equal(startedMono.length, 1, 'the first run started and waits');
  clock.step(HOUR);
  // The run ends before any timer wakes: its next start is planned off the stepped clock.
  finish?.();
  await new Promise((r) => setImmediate(r));
  await clock.advance(5_000);
  const gaps = startedMono.slice(1).map(([, at], i) => at - (startedMono[i]?.[1] ?? 0));
  assert.ok(startedMono.length >= 4, `the job went on after the step: ${startedMono.length} starts, gaps ${gaps.join(',')}`);
  await runner.stop();
});

test('stepped forward between two readings of one wake: fixedRate keeps its pace, not an hour later', async () => {
  const { clock, runner, startedMono } = setup();
  runner.add({ id: 'rate', fixedRate: '1s', run: () => {} });
  await runner.start();
  await clock.advance(2_500);
  // The wake at 3 s reads the wall clock for the step check, then again for its fires: the step
  // lands between the two.
  clock.stepAfterNextRead(HOUR);
  await clock.advance(5_000);
  const after = startedMono.map(([, at]) => at - T0).filter((at) => at > 3_000);
  assert.ok(after.length >= 4, `starts after the step, at ${after.join(', ')} ms of elapsed time: the job went on`);
  const rate = startedMono.map(([, at]) => at);
  const gaps = rate.slice(1).map((t, i) => t - (rate[i] as number));
  assert.ok(gaps.every((g) => g <= 1_000), `fixedRate gaps in elapsed time: ${gaps.join(',')}`);
  await runner.stop();
});
