/**
 * Worker threads: worker executors (a piscina pool, made on first use) and scheduled jobs with
 * `thread: 'worker'`. Real threads; the installation job's lease on a real redis-server.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { threadId } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, defineJob, defineTask, isLeaseholdError, type RunEndedEvent, type RunStartedEvent, type TaskEndedEvent } from '../src/index.js';
import { ThreadPool } from '../src/tasks/pool.js';
import { systemClock } from '../src/clock.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';
import { blocking, busy, cpuJob, fails, hash, hog, hogJob, small, spin, stubbornJob, tasks } from './fixtures/tasks-worker.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

function worker(concurrency = 2) {
  const log = memoryLogger('info');
  const r = createRunner({ local: true, logger: log.logger, shutdownGrace: '300ms', executors: { cpu: { kind: 'worker', concurrency } } });
  const ended: TaskEndedEvent[] = [];
  r.on('taskEnded', (e) => ended.push(e));
  return { r, log, ended };
}

test('a worker executor costs nothing until its first task, then runs tasks in worker threads with their logs on the node', async () => {
  const { r, log } = worker();
  const before = process.getActiveResourcesInfo().filter((x) => x !== 'TTYWrap').sort();
  r.addTask(hash);
  r.addTask(spin);
  r.addTask(fails);
  for (const t of tasks) r.addTask(t);
  await r.start();
  await sleep(50);
  const idle = process.getActiveResourcesInfo().filter((x) => x !== 'TTYWrap').sort();
  assert.deepEqual(idle.filter((x) => x === 'MessagePort' || x === 'Timeout'), before.filter((x) => x === 'MessagePort' || x === 'Timeout'), 'no thread, port or timer before the first task');
  const h = await r.submit(hash, { text: 'leasehold', rounds: 1000 });
  const result = await h.result();
  assert.notEqual(result.threadId, threadId, 'the handler ran in another thread');
  assert.equal(result.task, 'hash');
  assert.equal(result.taskId, h.id);
  assert.deepEqual([result.attempt, result.executor, result.instanceId], [1, 'cpu', r.instanceId], "the thread's context names the executor and the node");
  const line = log.lines.find((l) => /hashing in thread/.test(String(l['msg'])));
  assert.ok(line, 'ctx.log in the thread reaches the node logger');
  assert.equal(line['task'], 'hash');
  assert.equal(line['taskId'], h.id);
  assert.equal(line['executor'], 'cpu');
  assert.equal(line['rounds'], 1000);
  assert.equal(await (await r.submit<number, number>('in-array', 21)).result(), 42, 'a task found in an exported array');
  await assert.rejects((await r.submit(fails, null)).result(), /the report template is missing/);
  await r.stop();
});

test('a busy task past its timeout is interrupted: its thread is terminated and the task recorded timedOut', async () => {
  const { r, ended } = worker(1);
  await r.start();
  const t0 = performance.now();
  const h = await r.submit(spin, 30_000, { timeout: '200ms' });
  await assert.rejects(h.result(), (err: unknown) => isLeaseholdError(err, 'timeout'));
  const took = performance.now() - t0;
  assert.ok(took < 3_000, `interrupted after ${Math.round(took)} ms`);
  assert.equal(ended[0]?.outcome, 'timedOut');
  // The slot is free again: the next task runs on a new thread.
  assert.equal(await (await r.submit(spin, 10)).result(), 10);
  await r.stop();
});

test('bad input on a worker executor: a payload that cannot be cloned, a module that does not export the task', async () => {
  const { r } = worker(1);
  await r.start();
  await assert.rejects(r.submit(hash, { text: 'x', rounds: 1, f: () => 1 } as never), (err: unknown) => isLeaseholdError(err, 'invalidPayload') && /task "hash" on worker executor "cpu": its payload cannot be passed to a worker thread/.test((err as Error).message));
  const missing = defineTask({ id: 'not-exported', executor: 'cpu', module: new URL('./fixtures/tasks-worker.ts', import.meta.url).href, run: () => 1 });
  await assert.rejects((await r.submit(missing, null)).result(), (err: unknown) => isLeaseholdError(err, 'unknownTask') && /task "not-exported": its module .*tasks-worker.ts does not export it/.test((err as Error).message));
  const gone = defineTask({ id: 'gone', executor: 'cpu', module: new URL('./fixtures/no-such-module.ts', import.meta.url).href, run: () => 1 });
  await assert.rejects((await r.submit(gone, null)).result(), (err: unknown) => isLeaseholdError(err, 'invalidModule') && /task "gone": its module .*no-such-module.ts failed to load in a worker thread/.test((err as Error).message));
  await r.stop();
});

test('shutdown terminates a worker thread that ignores its signal: interrupted, and no thread is left', async () => {
  const { r, ended, log } = worker(1);
  await r.start();
  const h = await r.submit(spin, 30_000);
  await sleep(100);
  const t0 = performance.now();
  await r.stop();
  assert.ok(performance.now() - t0 < 3_000);
  await assert.rejects(h.result(), (err: unknown) => isLeaseholdError(err, 'shutdown'));
  assert.equal(ended[0]?.outcome, 'interrupted');
  assert.ok(log.lines.some((l) => l['executor'] === 'cpu' && l['interrupted'] === 1));
  // stop() resolves once the thread has exited: nothing of it is left.
  await assertNoThreadLeft();
});

test('a worker pool that was closed refuses a task with invalidState, rather than opening a thread nothing would close', async () => {
  const log = memoryLogger('info');
  const pool = new ThreadPool({ name: 'cpu', maxThreads: 1, idleTimeoutMs: 60_000, clock: systemClock, logger: log.logger });
  const hook = { onAbort: () => {} };
  const request = { kind: 'task', module: hash.module ?? '', id: hash.id, payload: { text: 'x', rounds: 1 }, ctx: {} } as const;
  const first = (await pool.run(request, hook)) as { threadId: number };
  assert.notEqual(first.threadId, threadId, 'the task ran in a thread');
  await pool.close();
  await assert.rejects(pool.run(request, hook), (err: unknown) => isLeaseholdError(err, 'invalidState') && /worker executor "cpu" is closed: task "hash" not run/.test((err as Error).message));
  assert.equal(pool.threads, 0);
  await assertNoThreadLeft('after a task refused by a closed pool');
});

/** The handles of worker threads this process holds: their ports and the threads themselves (Node 20 lists a thread held by `ref()` as its port). */
function threadResources(): string[] {
  return process.getActiveResourcesInfo().filter((x) => x === 'MessagePort' || x === 'Worker');
}

/**
 * Where the ports and threads made from now on were made, while they are open: for the message
 * of a thread's handle left after stop() (async_hooks, on for the one test that uses it, as it
 * slows every promise of the process down).
 */
function trackThreadHandles(): { readonly open: () => string[]; readonly stop: () => void } {
  const made = new Map<number, string>();
  const hook = createHook({
    init(id, type) {
      if (type !== 'MESSAGEPORT' && type !== 'WORKER') return;
      const frames = (new Error().stack ?? '').split('\n').slice(2).filter((l) => !l.includes('node:internal/async_hooks')).slice(0, 12);
      made.set(id, `${type} made at\n${frames.join('\n')}`);
    },
    destroy(id) {
      made.delete(id);
    },
  }).enable();
  return { open: () => [...made.values()], stop: () => void hook.disable() };
}

/** Fails when a thread's handle is left after stop(); the message says whether it went away in the next second (a thread stop() did not wait for) or stayed, and where it was made when `tracked`. */
async function assertNoThreadLeft(context = 'after stop()', tracked?: ReturnType<typeof trackThreadHandles>): Promise<void> {
  const left = threadResources();
  if (left.length === 0) return;
  const all = process.getActiveResourcesInfo().join(', ');
  await sleep(1_000);
  const where = tracked ? `; still open of those made during the test: ${tracked.open().join('\n') || 'none'}` : '';
  assert.fail(`${context}: ${left.join(', ')} still held (all active: ${all}); a second later: ${threadResources().join(', ') || 'gone'}${where}`);
}

test('shutdown waits for a terminated thread to exit, also one held in a synchronous call past its termination', async () => {
  const { r, ended } = worker(1);
  await r.start();
  // Loaded and running: the thread sits in a 2.5 s synchronous call that termination cannot cut short.
  await (await r.submit(blocking, 1)).result();
  const h = await r.submit(blocking, 2_500);
  await sleep(200);
  const t0 = performance.now();
  await r.stop();
  const took = performance.now() - t0;
  await assert.rejects(h.result(), (err: unknown) => isLeaseholdError(err, 'shutdown'));
  assert.equal(ended.at(-1)?.outcome, 'interrupted');
  assert.deepEqual(threadResources(), [], `stop() resolved after ${Math.round(took)} ms with the thread still there`);
  assert.ok(took >= 1_500, `stop() waited for the thread: ${Math.round(took)} ms`);
});

/** Runs the CPU-bound installation job (a busy loop three times its lease) next to a 200 ms instance job. */
async function cpuBoundNextToTicker(onWorker: boolean): Promise<{ outcome: string | undefined; lateness: number[] }> {
  const log = memoryLogger('warn');
  const r = createRunner({ redisUrl: redis.url, prefix: `cpu-${onWorker ? 'w' : 'l'}`, logger: log.logger, shutdownGrace: '2s' });
  const job = onWorker ? cpuJob : defineJob({ ...cpuJob, thread: 'loop', module: undefined, run: () => busy(1_200) });
  r.add(job);
  r.add(defineJob({ id: 'ticker', fixedRate: '200ms', run: () => {} }));
  const lateness: number[] = [];
  let outcome: string | undefined;
  r.on('runStarted', (e: RunStartedEvent) => {
    if (e.jobId === 'ticker') lateness.push(e.lagMs);
  });
  r.on('runEnded', (e: RunEndedEvent) => {
    if (e.jobId === 'cpu-job') outcome = e.outcome;
  });
  await r.start();
  await until('the CPU-bound job to end', () => outcome !== undefined, 10_000);
  await r.stop();
  return { outcome, lateness };
}

test('a CPU-bound installation job on a worker thread keeps its lease, and an instance job beside it stays on time; on the event loop it loses its lease', async () => {
  const onWorker = await cpuBoundNextToTicker(true);
  assert.equal(onWorker.outcome, 'succeeded', 'no lockLost: the lease watcher kept extending on the event loop');
  const sorted = [...onWorker.lateness].sort((a, b) => a - b);
  assert.ok(sorted.length >= 4, `${sorted.length} ticks ran meanwhile`);
  const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? Infinity;
  assert.ok(p99 < 50, `ticker p99 lateness ${p99} ms`);
  const onLoop = await cpuBoundNextToTicker(false);
  assert.equal(onLoop.outcome, 'lockLost', 'on the event loop the same job loses its lease, as before');
});

test('a busy worker job past its timeout is terminated and recorded timedOut, and its next tick runs', async () => {
  const log = memoryLogger('info');
  const r = createRunner({ local: true, logger: log.logger, shutdownGrace: '300ms' });
  r.add(stubbornJob);
  const outcomes: string[] = [];
  const starts: number[] = [];
  r.on('runStarted', (e) => e.jobId === 'stubborn-job' && starts.push(e.scheduledAt));
  r.on('runEnded', (e) => e.jobId === 'stubborn-job' && outcomes.push(e.outcome));
  await r.start();
  await until('two runs to end', () => outcomes.length >= 2, 8_000);
  assert.deepEqual(outcomes.slice(0, 2), ['timedOut', 'timedOut']);
  assert.ok(starts.length >= 2 && starts[1] !== starts[0], 'the next tick ran');
  await r.stop();
  assert.throws(() => createRunner({ logger: log.logger }).add(defineJob({ id: 'no-module', fixedRate: '1s', thread: 'worker', run: () => {} })), (err: unknown) => isLeaseholdError(err, 'invalidJob') && /job "no-module": field "module": a job on a worker thread/.test((err as Error).message));
  assert.throws(() => defineJob({ id: 'bad-thread', fixedRate: '1s', thread: 'fiber' as never, run: () => {} }), /job "bad-thread": field "thread": "fiber" must be "loop" or "worker"/);
});

test('a task whose thread reaches the executor\'s resourceLimits fails with workerOutOfMemory; the thread is replaced and the node runs the next tasks', async (t) => {
  // A port was once seen held after stop() here (Node 22, under the full suite): say where it was made.
  const tracked = trackThreadHandles();
  t.after(() => tracked.stop());
  const log = memoryLogger('info');
  const r = createRunner({ logger: log.logger, shutdownGrace: '300ms', executors: { small: { kind: 'worker', concurrency: 1, resourceLimits: { maxOldGenerationSizeMb: 32 } } } });
  const ended: TaskEndedEvent[] = [];
  r.on('taskEnded', (e) => ended.push(e));
  r.addTask(hog);
  r.addTask(small);
  await r.start();
  await assert.rejects((await r.submit(hog, null)).result(), (err: unknown) => isLeaseholdError(err, 'workerOutOfMemory') && /^task "hog" on worker executor "small": the worker thread ran out of memory under resourceLimits \{ maxOldGenerationSizeMb: 32 \}/.test((err as Error).message));
  assert.equal(ended[0]?.outcome, 'failed');
  assert.equal(await (await r.submit(small, 1_000)).result(), 1_000, 'the next task runs on a new thread');
  const [executor] = await r.executors();
  assert.deepEqual([executor?.failed, executor?.succeeded], [1, 1]);
  assert.ok(log.lines.some((l) => l['task'] === 'hog' && /ran out of memory/.test(String(l['error']))), 'the failure is logged');
  await r.stop();
  await assertNoThreadLeft('after stop()', tracked);
});

test('a thread: "worker" job whose thread reaches its resourceLimits is recorded failed with workerOutOfMemory, and its next run and the other jobs go on', async () => {
  const log = memoryLogger('info');
  const r = createRunner({ logger: log.logger, shutdownGrace: '300ms' });
  r.add(hogJob);
  let ticks = 0;
  r.add(defineJob({ id: 'beside', fixedRate: '100ms', run: () => void ticks++ }));
  const hogRuns: RunEndedEvent[] = [];
  r.on('runEnded', (e) => e.jobId === 'hog-job' && hogRuns.push(e));
  await r.start();
  await until('two runs of the hog to end', () => hogRuns.length >= 2, 20_000);
  for (const run of hogRuns.slice(0, 2)) {
    assert.equal(run.outcome, 'failed');
    assert.match(String(run.error), /^job "hog-job" on worker executor "jobs": the worker thread ran out of memory under resourceLimits \{ maxOldGenerationSizeMb: 32 \}/);
  }
  assert.ok(ticks >= 3, `the job beside it ran ${ticks} times`);
  await r.stop();
  assert.throws(() => defineJob({ id: 'loop-limits', fixedRate: '1s', resourceLimits: { maxOldGenerationSizeMb: 64 }, run: () => {} }), (err: unknown) => isLeaseholdError(err, 'invalidJob') && /job "loop-limits": field "resourceLimits": applies to jobs on worker threads only/.test((err as Error).message));
  assert.throws(() => defineJob({ id: 'bad-limits', fixedRate: '1s', thread: 'worker', module: 'file:///x.js', resourceLimits: { maxOldGenerationSizeMb: -1 }, run: () => {} }), /job "bad-limits": field "resourceLimits": maxOldGenerationSizeMb: -1 must be a number of MB above 0/);
  assert.throws(() => createRunner({ executors: { cpu: { kind: 'worker', resourceLimits: { maxHeap: 64 } as never } } }), (err: unknown) => isLeaseholdError(err, 'invalidExecutor') && /executor "cpu": field "resourceLimits": unknown limit "maxHeap"/.test((err as Error).message));
  assert.throws(() => createRunner({ executors: { io: { kind: 'loop', resourceLimits: { maxOldGenerationSizeMb: 64 } } } }), /executor "io": field "resourceLimits": applies to worker executors only/);
});
