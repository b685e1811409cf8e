/**
 * Runs in real time (SPEC 3.3, 3.6): timeouts abort the signal, a handler that ignores it
 * blocks only its own job, and stop() leaves nothing behind. Generous bounds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, LeaseholdError, type Duration, type RunEndedEvent, type SkippedEvent } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';

function make(grace: Duration = '200ms') {
  const { logger, lines } = memoryLogger();
  const runner = createRunner({ logger, instanceId: 'rt', shutdownGrace: grace });
  const ended: RunEndedEvent[] = [];
  const skipped: SkippedEvent[] = [];
  runner.on('runEnded', (e) => ended.push(e));
  runner.on('skipped', (e) => skipped.push(e));
  return { runner, ended, skipped, lines };
}

test('at the timeout the signal aborts with reason timeout and the run is timedOut', async () => {
  const { runner, ended } = make();
  let reason: unknown;
  runner.add({
    id: 't',
    fixedDelay: '1h',
    timeout: '150ms',
    run: (ctx) =>
      new Promise((_, reject) => {
        ctx.signal.addEventListener('abort', () => {
          reason = ctx.signal.reason;
          reject(ctx.signal.reason);
        });
      }),
  });
  await runner.start();
  await sleep(600);
  assert.ok(reason instanceof LeaseholdError);
  assert.equal((reason as LeaseholdError).code, 'timeout');
  assert.equal(ended[0]?.outcome, 'timedOut');
  assert.ok((ended[0]?.durationMs ?? 0) >= 140);
  await runner.stop();
});

test('a handler that ignores its signal blocks only its own job until it settles', async () => {
  const { runner, ended, skipped } = make();
  let stubbornCalls = 0;
  let otherCalls = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  runner.add({ id: 'stubborn', fixedRate: '100ms', timeout: '150ms', run: async () => { stubbornCalls++; if (stubbornCalls === 1) await gate; } });
  runner.add({ id: 'other', fixedRate: '100ms', run: () => { otherCalls++; } });
  await runner.start();
  await sleep(1_500);
  assert.equal(stubbornCalls, 1, 'never started again while the first handler hangs');
  assert.ok(otherCalls >= 8, `other job kept running: ${otherCalls}`);
  assert.equal(ended.find((e) => e.jobId === 'stubborn')?.outcome, 'timedOut', 'reported as timed out even though it has not settled');
  assert.ok(skipped.filter((s) => s.jobId === 'stubborn' && s.reason === 'overrun').length >= 5);
  release();
  await sleep(400);
  assert.ok(stubbornCalls >= 2, 'runs again once settled');
  await runner.stop();
});

test('stop(): no new run, waits the grace, aborts the rest with shutdown as interrupted, leaves no timer behind', async () => {
  const before = new Set(process.getActiveResourcesInfo());
  const countTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const timersBefore = countTimers();
  const { runner, ended } = make('300ms');
  let reason: unknown;
  let quickDone = false;
  runner.add({ id: 'quick', fixedDelay: '1h', run: async () => { await sleep(100); quickDone = true; } });
  runner.add({
    id: 'long',
    fixedDelay: '1h',
    run: (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => { reason = ctx.signal.reason; reject(ctx.signal.reason); })),
  });
  runner.add({ id: 'later', cron: '0 0 0 1 1 *', run: () => {} });
  await runner.start();
  await sleep(50);
  const t0 = Date.now();
  await runner.stop();
  const took = Date.now() - t0;
  assert.ok(quickDone, 'a run that ends within the grace completes');
  assert.ok(took >= 250 && took < 3_000, `waited the grace: ${took} ms`);
  assert.equal((reason as LeaseholdError).code, 'shutdown');
  assert.deepEqual(ended.map((e) => [e.jobId, e.outcome]).sort(), [['long', 'interrupted'], ['quick', 'succeeded']]);
  await sleep(20);
  assert.equal(countTimers(), timersBefore, `no timer left: ${process.getActiveResourcesInfo().join(',')}`);
  const extra = process.getActiveResourcesInfo().filter((r) => !before.has(r));
  assert.deepEqual(extra, []);
});

test('a handler that ignores shutdown is reported interrupted and stop() still resolves', async () => {
  const { runner, ended } = make('100ms');
  runner.add({ id: 'deaf', fixedDelay: '1h', run: () => sleep(4_000) });
  await runner.start();
  await sleep(30);
  const t0 = Date.now();
  await runner.stop();
  assert.ok(Date.now() - t0 < 2_500);
  assert.equal(ended[0]?.outcome, 'interrupted');
});
