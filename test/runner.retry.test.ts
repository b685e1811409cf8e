/**
 * Retries (a job's `retry` option): a failed attempt is retried on the same tick, under the
 * same lease for an installation job, never past the job's next tick or its timeout; each
 * attempt is reported on its own, and the tick counts once, by its final attempt.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRunner, type JobContext, type RunEndedEvent, type RunStartedEvent } from '../src/index.js';
import { JobBatch } from '../src/status/batch.js';
import { parseRetry, retryDelayMs } from '../src/schedule/retry.js';
import { ManualClock } from './helpers/clock.js';
import { memoryLogger } from './helpers/log.js';

const T0 = Date.parse('2026-03-02T10:00:00.000Z');

function setup() {
  const clock = new ManualClock(T0);
  const { logger, lines } = memoryLogger();
  const runner = createRunner({ local: true, clock, logger, instanceId: 'node-a', shutdownGrace: '2s' });
  const started: RunStartedEvent[] = [];
  const ended: RunEndedEvent[] = [];
  runner.on('runStarted', (e) => started.push(e));
  runner.on('runEnded', (e) => ended.push(e));
  return { clock, runner, started, ended, lines };
}

test('a failed attempt is retried after the backoff on the same tick, and the tick ends with the last attempt', async () => {
  const { clock, runner, started, ended } = setup();
  const seen: Array<[number, number]> = [];
  runner.add({
    id: 'flaky', fixedRate: '1m', initialDelay: '1s', retry: { attempts: 3, backoff: '5s' },
    run: (ctx: JobContext) => {
      seen.push([ctx.attempt, ctx.startedAt.getTime() - T0]);
      if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} failed`);
    },
  });
  await runner.start();
  await clock.advance(20_000);
  assert.deepEqual(seen, [[1, 1_000], [2, 6_000], [3, 11_000]]);
  assert.deepEqual(started.map((e) => [e.attempt, e.scheduledAt - T0]), [[1, 1_000], [2, 1_000], [3, 1_000]]);
  assert.deepEqual(ended.map((e) => [e.attempt, e.outcome, e.willRetry]), [[1, 'failed', true], [2, 'failed', true], [3, 'succeeded', false]]);
  assert.equal(new Set(ended.map((e) => e.runId)).size, 3, 'each attempt has a run id of its own');
  await runner.stop();
});

test('no retry starts at or after the next tick: the tick fails with the attempts that fitted', async () => {
  const { clock, runner, ended } = setup();
  runner.add({ id: 'tight', fixedRate: '10s', initialDelay: '1s', retry: { attempts: 5, backoff: '4s' }, run: () => { throw new Error('down'); } });
  await runner.start();
  await clock.advance(10_500); // tick at 1 s: attempts at 1 s, 5 s, 9 s; a fourth at 13 s would pass the next tick (11 s)
  const first = ended.filter((e) => e.scheduledAt === T0 + 1_000);
  assert.deepEqual(first.map((e) => [e.attempt, e.willRetry]), [[1, true], [2, true], [3, false]]);
  assert.equal(first.at(-1)?.outcome, 'failed');
  await runner.stop();
});

test('an installation job retries under the same lease (one claim, one fencing token)', async () => {
  const { clock, runner, started, ended } = setup();
  runner.add({ id: 'inst', scope: 'installation', fixedRate: '10s', initialDelay: '1s', retry: { attempts: 2, backoff: '1s' }, run: (ctx: JobContext) => { if (ctx.attempt === 1) throw new Error('once'); } });
  await runner.start();
  await clock.advance(15_000); // the shared grid's first tick after the initial delay: 10 s
  assert.deepEqual(started.map((e) => [e.attempt, e.fencingToken, e.scheduledAt - T0]), [[1, 1, 10_000], [2, 1, 10_000]]);
  assert.deepEqual(ended.map((e) => e.outcome), ['failed', 'succeeded']);
  await runner.stop();
});

test('the timeout covers every attempt, and a stop during the backoff ends the tick as interrupted', async () => {
  const { clock, runner, ended } = setup();
  runner.add({ id: 'slow', fixedRate: '1h', initialDelay: '1s', timeout: '10s', retry: { attempts: 10, backoff: '4s' }, run: () => { throw new Error('no'); } });
  await runner.start();
  await clock.advance(15_000);
  // Attempts at 1 s, 5 s, 9 s; one at 13 s would start past the timeout (11 s).
  assert.deepEqual(ended.map((e) => [e.attempt, e.willRetry]), [[1, true], [2, true], [3, false]]);

  const other = setup();
  other.runner.add({ id: 'stopped', fixedRate: '1h', initialDelay: '1s', retry: { attempts: 3, backoff: '30s' }, run: () => { throw new Error('no'); } });
  await other.runner.start();
  await other.clock.advance(2_000);
  const stopping = other.runner.stop();
  await other.clock.advance(3_000);
  await stopping;
  assert.deepEqual(other.ended.map((e) => [e.attempt, e.outcome, e.willRetry]), [[1, 'failed', true], [1, 'interrupted', false]]);
  await runner.stop();
});

test('the stats count a tick once, by its final attempt, and keep every attempt in the recent runs', () => {
  const batch = new JobBatch(false, 50);
  const base = { jobId: 'j', runId: 'r', scope: 'installation' as const, instanceId: 'n', scheduledAt: T0, startedAt: T0, lagMs: 0, fencingToken: 1, manual: false, endedAt: T0, durationMs: 5, cause: undefined };
  batch.addRun({ ...base, attempt: 1, outcome: 'failed', error: 'a', willRetry: true });
  batch.addRun({ ...base, attempt: 2, outcome: 'failed', error: 'b', willRetry: true });
  batch.addRun({ ...base, attempt: 3, outcome: 'succeeded', error: undefined, willRetry: false });
  const rec = batch.toRecord('n');
  assert.deepEqual(rec.incr, { runs: 1, succeeded: 1 });
  assert.equal(rec.last?.['lastOutcome'], 'succeeded');
  assert.equal(rec.fails, undefined, 'no failing streak from retried attempts');
  assert.deepEqual(rec.runs?.map((r) => JSON.parse(r) as { attempt: number; outcome: string }).map((r) => [r.attempt, r.outcome]), [[1, 'failed'], [2, 'failed'], [3, 'succeeded']]);
});

test('retry options: checked with errors naming the job and field; exponential backoff with jitter stays within its bounds', () => {
  const { runner } = setup();
  assert.throws(() => runner.add({ id: 'r1', fixedRate: '1s', retry: { attempts: 0 }, run: () => {} }), /job "r1": field "retry": attempts: 0 must be a whole number from 1 to 100/);
  assert.throws(() => runner.add({ id: 'r2', fixedRate: '1s', retry: { attempts: 2, backoff: 'soon' as never }, run: () => {} }), /job "r2": field "retry": .*"soon"/);
  assert.throws(() => runner.add({ id: 'r3', fixedRate: '1s', retry: { attempts: 2, backoff: { initial: '10s', max: '1s' } }, run: () => {} }), /job "r3": field "retry": backoff.max/);
  assert.throws(() => runner.add({ id: 'r4', fixedRate: '1s', retry: { attempts: 2, tries: 3 } as never, run: () => {} }), /unknown field "tries"/);
  const p = parseRetry({ attempts: 6, backoff: { initial: '1s', max: '5s' } });
  for (let attempt = 1; attempt <= 5; attempt++) {
    const base = Math.min(5_000, 1_000 * 2 ** (attempt - 1));
    assert.equal(retryDelayMs(p, attempt, () => 0), base / 2);
    assert.equal(retryDelayMs(p, attempt, () => 0.999999), Math.round(base / 2 + (0.999999 * base) / 2));
  }
  assert.equal(retryDelayMs(parseRetry({ attempts: 2 }), 1), 1_000, 'default backoff 1s');
});
