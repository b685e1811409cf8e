/**
 * The default timeout (SPEC 3.3): a run without a `timeout` is aborted with reason `timeout`
 * and recorded `timedOut` after the larger of 5 minutes and 3 intervals, or an hour for a
 * cron; a `timeout` given wins. Instance jobs on a runner alone, with an injected clock, each
 * handler waiting for its signal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Scheduler } from '../src/runner/runner.js';
import type { JobContext } from '../src/index.js';
import { ManualClock } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';

const T0 = Date.parse('2026-05-04T12:00:00.000Z');
const MIN = 60_000;

/** A handler that ends only when its signal aborts, telling the reason. */
const untilAborted = (ctx: JobContext): Promise<void> =>
  new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));

for (const c of [
  { name: 'a fixedRate of 10 s: 5 minutes', job: { fixedRate: '10s' }, startsAfter: 10_000, timeoutMs: 5 * MIN },
  { name: 'a fixedDelay of 30 s: 5 minutes', job: { fixedDelay: '30s' }, startsAfter: 30_000, timeoutMs: 5 * MIN },
  { name: 'a fixedRate of 10 minutes: 3 intervals, 30 minutes', job: { fixedRate: '10m' }, startsAfter: 10 * MIN, timeoutMs: 30 * MIN },
  { name: 'a cron every minute: an hour', job: { cron: '0 * * * * *' }, startsAfter: MIN, timeoutMs: 60 * MIN },
  { name: 'a timeout given: that timeout', job: { fixedRate: '10m', timeout: '2m' }, startsAfter: 10 * MIN, timeoutMs: 2 * MIN },
] as const) {
  test(`the default timeout of ${c.name}`, async () => {
    const clock = new ManualClock(T0);
    const core = new Scheduler({ instanceId: 'me', logger: memoryLogger().logger, shutdownGraceMs: 0, clock });
    const ends: Array<{ outcome: string; durationMs: number }> = [];
    const started: number[] = [];
    core.on('runStarted', () => started.push(clock.now()));
    core.on('runEnded', (e) => ends.push({ outcome: e.outcome, durationMs: e.durationMs }));
    core.add({ id: 'slow', ...c.job, run: untilAborted });
    core.start();
    for (let waited = 0; started.length === 0 && waited <= c.startsAfter; waited += 1_000) await clock.advance(1_000);
    const startedAt = started[0];
    assert.ok(startedAt !== undefined, 'the first run started');
    await clock.advance(startedAt + c.timeoutMs - 1 - clock.now());
    assert.deepEqual(ends, [], 'not aborted a millisecond before the timeout');
    await clock.advance(1);
    assert.deepEqual(ends, [{ outcome: 'timedOut', durationMs: c.timeoutMs }]);
    await core.stop();
  });
}
