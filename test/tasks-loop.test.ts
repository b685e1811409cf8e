/**
 * Background tasks on the event loop: defining and submitting, bounded concurrency, the FIFO
 * queue and its limit, results, fire-and-forget failures, timeouts, cancel, deduplication,
 * delays, the shutdown, and the errors of bad input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, defineTask, isLeaseholdError, type TaskEndedEvent } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';

function runner(executors: Parameters<typeof createRunner>[0] = {}) {
  const log = memoryLogger('info');
  const r = createRunner({ logger: log.logger, shutdownGrace: '300ms', ...executors });
  const ended: TaskEndedEvent[] = [];
  r.on('taskEnded', (e) => ended.push(e));
  return { r, log, ended };
}

test('a task runs with its payload and context; its result is the handler value', async () => {
  const { r } = runner();
  const add = defineTask({ id: 'add', run: (p: { a: number; b: number }, ctx) => ({ sum: p.a + p.b, ctx: { task: ctx.task, executor: ctx.executor, attempt: ctx.attempt, instanceId: ctx.instanceId, taskId: ctx.taskId } }) });
  r.addTask(add);
  await r.start();
  const handle = await r.submit(add, { a: 2, b: 3 });
  const result = await handle.result();
  assert.equal(result.sum, 5);
  assert.deepEqual(result.ctx, { task: 'add', executor: 'default', attempt: 1, instanceId: r.instanceId, taskId: handle.id });
  const byId = await r.submit<{ a: number; b: number }, { sum: number }>('add', { a: 1, b: 1 });
  assert.equal((await byId.result()).sum, 2);
  await r.stop();
});

test('tasks of different payload and result types register in one loop over a list, as a jobs module exports them', async () => {
  const { r } = runner();
  const greet = defineTask({ id: 'greet', run: (name: string) => `hello ${name}` });
  const count = defineTask({ id: 'count', run: (p: { items: number[] }) => ({ n: p.items.length }) });
  const tick = defineTask({ id: 'tick', run: () => undefined });
  for (const task of [greet, count, tick]) r.addTask(task);
  await r.start();
  assert.equal(await (await r.submit(greet, 'world')).result(), 'hello world');
  assert.deepEqual(await (await r.submit(count, { items: [1, 2, 3] })).result(), { n: 3 });
  await r.stop();
});

test('a loop executor runs at most `concurrency` tasks at once, first in first out, and refuses past its queue limit', async () => {
  const { r } = runner({ executors: { io: { kind: 'loop', concurrency: 2, queueLimit: 3 } } });
  let active = 0;
  let peak = 0;
  const order: number[] = [];
  const t = defineTask({
    id: 'io-task',
    executor: 'io',
    async run(n: number) {
      active++;
      peak = Math.max(peak, active);
      order.push(n);
      await sleep(30);
      active--;
      return n;
    },
  });
  await r.start();
  const handles = [];
  for (let i = 0; i < 5; i++) handles.push(await r.submit(t, i));
  await assert.rejects(r.submit(t, 5), (err: unknown) => isLeaseholdError(err, 'queueFull') && /executor "io".*queueLimit 3/.test((err as Error).message));
  assert.deepEqual(await Promise.all(handles.map((h) => h.result())), [0, 1, 2, 3, 4]);
  assert.equal(peak, 2);
  assert.deepEqual(order, [0, 1, 2, 3, 4]);
  const [stats] = await r.executors();
  assert.equal(stats?.name, 'io');
  assert.equal(stats?.succeeded, 5);
  assert.equal(stats?.active, 0);
  await r.stop();
});

test('a failure nobody awaits is logged once and counted, and is never an unhandled rejection; the recovery is logged', async () => {
  const { r, log, ended } = runner();
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown): void => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  let fail = true;
  const flaky = defineTask({
    id: 'flaky',
    run() {
      if (fail) throw new Error('the webhook answered 500');
    },
  });
  await r.start();
  await r.submit(flaky, null);
  await r.submit(flaky, null);
  await sleep(50);
  fail = false;
  await r.submit(flaky, null);
  await sleep(50);
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, []);
  assert.deepEqual(ended.map((e) => e.outcome), ['failed', 'failed', 'succeeded']);
  const warned = log.lines.filter((l) => l['task'] === 'flaky' && l['level'] === 40);
  assert.equal(warned.length, 1, 'the first failure is logged, not every repeat');
  assert.match(String(warned[0]?.['msg']), /task "flaky" failed: the webhook answered 500/);
  assert.ok(log.lines.some((l) => l['task'] === 'flaky' && /recovered/.test(String(l['msg']))));
  const [stats] = await r.executors();
  assert.equal(stats?.failed, 2);
  await r.stop();
});

test('a timeout aborts the task signal with reason timeout and records timedOut; cancel records cancelled', async () => {
  const { r, ended } = runner();
  const slow = defineTask({
    id: 'slow',
    timeout: '100ms',
    run: (_: null, ctx) =>
      new Promise((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
      }),
  });
  await r.start();
  const h = await r.submit(slow, null);
  await assert.rejects(h.result(), (err: unknown) => isLeaseholdError(err, 'timeout') && /timed out after 100ms/.test((err as Error).message));
  const c = await r.submit(slow, null, { timeout: '10s' });
  await sleep(20);
  assert.equal(r.cancelTask(c.id), true);
  await assert.rejects(c.result(), (err: unknown) => isLeaseholdError(err, 'cancelled'));
  assert.equal(r.cancelTask('no-such-task'), false);
  await sleep(20);
  assert.deepEqual(ended.map((e) => e.outcome), ['timedOut', 'cancelled']);
  await r.stop();
});

test('a handler that cancels its own task before its first await ends cancelled, once: started by its submit or in the slot another task left', async () => {
  const { r, ended } = runner({ executors: { one: { kind: 'loop', concurrency: 1 } } });
  const quick = defineTask({ id: 'quick', executor: 'one', run: (n: number) => n });
  const selfCancel = defineTask({
    id: 'self-cancel',
    executor: 'one',
    run: (_: null, ctx) => {
      const cancelled = r.cancelTask(ctx.taskId);
      return new Promise((_resolve, reject) => {
        if (ctx.signal.aborted) reject(ctx.signal.reason as Error);
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
        if (!cancelled) reject(new Error('cancelTask did not know the running task'));
      });
    },
  });
  r.addTask(quick);
  r.addTask(selfCancel);
  await r.start();
  const first = await r.submit(selfCancel, null);
  await assert.rejects(first.result(), (err: unknown) => isLeaseholdError(err, 'cancelled'));
  const before = await r.submit(quick, 1);
  const queued = await r.submit(selfCancel, null);
  assert.equal(await before.result(), 1);
  await assert.rejects(queued.result(), (err: unknown) => isLeaseholdError(err, 'cancelled'));
  await sleep(20);
  assert.deepEqual(ended.map((e) => `${e.task} ${e.outcome}`), ['self-cancel cancelled', 'quick succeeded', 'self-cancel cancelled']);
  const stats = (await r.executors()).find((e) => e.name === 'one');
  assert.deepEqual([stats?.succeeded, stats?.cancelled, stats?.failed, stats?.active, stats?.queued], [1, 2, 0, 0, 0]);
  await r.stop();
});

test('the same deduplication id is one task while it waits or runs; a delay holds the start back', async () => {
  const { r } = runner();
  let runs = 0;
  const t = defineTask({
    id: 'dedup',
    async run() {
      runs++;
      await sleep(50);
      return runs;
    },
  });
  await r.start();
  const a = await r.submit(t, null, { id: 'order-42' });
  const b = await r.submit(t, null, { id: 'order-42' });
  assert.equal(a.id, 'order-42');
  assert.equal(b.id, 'order-42');
  assert.equal(await a.result(), 1);
  assert.equal(await b.result(), 1);
  assert.equal(runs, 1);
  const t0 = performance.now();
  const delayed = await r.submit(defineTask({ id: 'delayed', run: () => performance.now() }), null, { delay: '150ms' });
  const startedAt = await delayed.result();
  assert.ok(startedAt - t0 >= 140, `started ${Math.round(startedAt - t0)} ms after submit`);
  await r.stop();
});

test('shutdown: submit rejects with shutdown, running tasks get the grace, the rest is interrupted and reported in one line', async () => {
  const { r, log, ended } = runner({ executors: { io: { concurrency: 2 } } });
  const quick = defineTask({ id: 'quick', executor: 'io', run: () => sleep(100).then(() => 'done') });
  const stuck = defineTask({ id: 'stuck', executor: 'io', run: () => new Promise(() => {}) });
  await r.start();
  const q = await r.submit(quick, null);
  const s = await r.submit(stuck, null);
  const waiting = await r.submit(stuck, null);
  const stopping = r.stop();
  await assert.rejects(r.submit(quick, null), (err: unknown) => isLeaseholdError(err, 'shutdown'));
  const t0 = performance.now();
  await stopping;
  const took = performance.now() - t0;
  assert.equal(await q.result(), 'done', 'a task that ends within the grace ends normally');
  await assert.rejects(s.result(), (err: unknown) => isLeaseholdError(err, 'shutdown'));
  await assert.rejects(waiting.result(), (err: unknown) => isLeaseholdError(err, 'shutdown'));
  assert.ok(took < 3_000, `stop took ${Math.round(took)} ms`);
  assert.deepEqual(ended.map((e) => `${e.task}:${e.outcome}`).sort(), ['quick:succeeded', 'stuck:interrupted', 'stuck:interrupted']);
  const lines = log.lines.filter((l) => /interrupted by the shutdown/.test(String(l['msg'])));
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.['interrupted'], 2);
  assert.equal(lines[0]?.['executor'], 'io');
});

test('bad input: a clear error naming the task or executor and the field', async () => {
  assert.throws(() => defineTask({ id: 'bad id!', run: () => {} }), (err: unknown) => isLeaseholdError(err, 'invalidTask') && /field "id"/.test((err as Error).message));
  assert.throws(() => defineTask({ id: 'x', run: 5 as never }), /task "x": field "run"/);
  assert.throws(() => defineTask({ id: 'x', timeout: 'soon' as never, run: () => {} }), /task "x": field "timeout"/);
  assert.throws(() => createRunner({ executors: { cpu: { kind: 'fiber' as never } } }), (err: unknown) => isLeaseholdError(err, 'invalidExecutor') && /executor "cpu": field "kind": "fiber" is not an executor kind/.test((err as Error).message));
  assert.throws(() => createRunner({ executors: { cpu: { concurrency: 0 } } }), /executor "cpu": field "concurrency": 0 must be a whole number from 1/);
  assert.throws(() => createRunner({ executors: { cpu: { kind: 'loop', attempts: 3 } } }), /executor "cpu": field "attempts": applies to queue executors only/);
  const { r } = runner({ executors: { cpu: { kind: 'worker' } } });
  assert.throws(() => r.addTask(defineTask({ id: 'hash', executor: 'cpu', run: () => {} })), /task "hash": field "module": executor "cpu" runs tasks in worker threads/);
  const noRedis = createRunner({ logger: memoryLogger().logger, executors: { jobs: { kind: 'queue' } } });
  assert.throws(() => noRedis.addTask(defineTask({ id: 'q', executor: 'jobs', run: () => {} })), /task "q": the queue executor "jobs" needs Redis, and this runner has none/);
  await r.start();
  await assert.rejects(r.submit('nobody-has-it', null), (err: unknown) => isLeaseholdError(err, 'unknownTask') && /no task "nobody-has-it" is registered/.test((err as Error).message));
  await assert.rejects(r.submit(defineTask({ id: 'ok', run: () => {} }), null, { attempts: 0 }), /submit "ok": option "attempts"/);
  await assert.rejects(r.submit(defineTask({ id: 'ok', run: () => {} }), null, { delay: -1 }), /submit "ok": option "delay"/);
  await assert.rejects(r.submit(defineTask({ id: 'ok', run: () => {} }), null, { attempts: 3 }), /submit "ok": options "attempts" and "backoff" apply to queue executors only; executor "default" is a loop executor/);
  process.env['LEASEHOLD_EXECUTOR_IO_CONCURRENCY'] = 'many';
  try {
    assert.throws(() => createRunner({ executors: { io: {} } }), /LEASEHOLD_EXECUTOR_IO_CONCURRENCY="many" is not a whole number/);
  } finally {
    delete process.env['LEASEHOLD_EXECUTOR_IO_CONCURRENCY'];
  }
  await r.stop();
});

test('the environment tunes an executor at deployment', async () => {
  process.env['LEASEHOLD_EXECUTOR_MAIL_CONCURRENCY'] = '3';
  try {
    const { r } = runner({ executors: { mail: { concurrency: 1 } } });
    const [stats] = await r.executors();
    assert.equal(stats?.concurrency, 3);
    await r.stop();
  } finally {
    delete process.env['LEASEHOLD_EXECUTOR_MAIL_CONCURRENCY'];
  }
});
