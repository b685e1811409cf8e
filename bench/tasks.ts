/**
 * S6 and S7, the background tasks' benchmark (part of `npm run bench`).
 *
 * S6: 10,000 small tasks through each kind of executor against the library used directly with
 * the same concurrency: a plain promise pool (loop), a piscina pool (worker), BullMQ's Queue
 * and Worker (queue). Throughput in tasks per second, and for the queue the Redis commands per
 * task (INFO commandstats, which counts the commands inside Lua scripts too).
 *
 * S7: a 200 ms CPU-bound job every second next to 20 instance jobs every second, for
 * `BENCH_S7_SECONDS` (default 20): the 20 jobs' start lateness with the heavy job on the event
 * loop and on a worker thread.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Piscina } from 'piscina';
import { Queue, Worker } from 'bullmq';
import { createRunner, defineJob, defineTask, type TaskHandle } from '../dist/index.js';
import { startBenchRedis, type BenchRedis } from './redis.js';

const TASKS = Number(process.env['BENCH_S6_TASKS'] ?? 10_000);
const S7_SECONDS = Number(process.env['BENCH_S7_SECONDS'] ?? 20);
const LOOP_CONCURRENCY = 50;
const WORKER_CONCURRENCY = 2;
const QUEUE_CONCURRENCY = 50;
const MODULE = new URL('./workers/tasks-module.mjs', import.meta.url).href;
/** `BENCH_S6_KINDS=loop,worker`: only those kinds (the others are reported as not run). */
const S6_KINDS = (process.env['BENCH_S6_KINDS'] ?? 'loop,worker,queue').split(',').map((k) => k.trim());

/** One side of an S6 comparison. */
export interface ThroughputFigure {
  readonly tasksPerSecond: number;
  /** Queue only: Redis commands per task. */
  readonly redisCommandsPerTask?: number;
}

/** S6's figures, by kind. */
export interface S6Figures {
  readonly tasks: number;
  /**
   * Loop only: a bare pool with leasehold's submission API and nothing behind it (each submit
   * awaited, a handle per task, its result awaited): what that API shape costs by itself.
   */
  readonly loopApiFloor?: ThroughputFigure;
  readonly kinds: Partial<Record<'loop' | 'worker' | 'queue', { readonly leasehold: ThroughputFigure; readonly direct: ThroughputFigure; readonly concurrency: number }>>;
}

/** S7's figures: the 20 light jobs' lateness, ms. */
export interface S7Figures {
  readonly seconds: number;
  readonly onLoop: { readonly p50: number; readonly p99: number; readonly max: number; readonly starts: number };
  readonly onWorker: { readonly p50: number; readonly p99: number; readonly max: number; readonly starts: number };
}

const silent = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {}, child: () => silent, isLevelEnabled: () => false };

function rate(n: number, ms: number): number {
  return Math.round((n / ms) * 1000);
}

/** A bare in-memory pool with `runner.submit`'s shape: `submit` resolves to a handle whose `result()` is the task's. */
class BarePool {
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  private seq = 0;

  constructor(private readonly concurrency: number) {}

  submit<R>(run: () => Promise<R>): Promise<{ id: string; result(): Promise<R> }> {
    let resolve!: (value: R) => void;
    let reject!: (error: unknown) => void;
    const done = new Promise<R>((res, rej) => ((resolve = res), (reject = rej)));
    done.catch(() => {});
    const start = (): void => {
      this.running++;
      run()
        .then(resolve, reject)
        .finally(() => {
          this.running--;
          this.waiting.shift()?.();
        });
    };
    if (this.running < this.concurrency) start();
    else this.waiting.push(start);
    return Promise.resolve({ id: `t-${++this.seq}`, result: () => done });
  }
}

async function s6LoopFloor(work: (n: number) => Promise<number>): Promise<ThroughputFigure> {
  const pool = new BarePool(LOOP_CONCURRENCY);
  const t0 = performance.now();
  const handles: { result(): Promise<number> }[] = [];
  for (let i = 0; i < TASKS; i++) handles.push(await pool.submit(() => work(i)));
  await Promise.all(handles.map((h) => h.result()));
  return { tasksPerSecond: rate(TASKS, performance.now() - t0) };
}

async function s6Loop(): Promise<{ leasehold: ThroughputFigure; direct: ThroughputFigure; floor: ThroughputFigure }> {
  const work = async (n: number): Promise<number> => {
    await null;
    return n * n;
  };
  // A plain promise pool: LOOP_CONCURRENCY runners over a shared index.
  let t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: LOOP_CONCURRENCY }, async () => {
      while (next < TASKS) await work(next++);
    }),
  );
  const direct = { tasksPerSecond: rate(TASKS, performance.now() - t0) };
  const runner = createRunner({ logger: silent, executors: { io: { kind: 'loop', concurrency: LOOP_CONCURRENCY } } });
  const task = defineTask({ id: 'square', executor: 'io', run: (n: number) => work(n) });
  await runner.start();
  t0 = performance.now();
  const handles: TaskHandle<number>[] = [];
  for (let i = 0; i < TASKS; i++) handles.push(await runner.submit(task, i));
  await Promise.all(handles.map((h) => h.result()));
  const leasehold = { tasksPerSecond: rate(TASKS, performance.now() - t0) };
  await runner.stop();
  return { leasehold, direct, floor: await s6LoopFloor(work) };
}

async function s6Worker(): Promise<{ leasehold: ThroughputFigure; direct: ThroughputFigure }> {
  const pool = new Piscina({ filename: new URL('./workers/task-direct.mjs', import.meta.url).href, minThreads: WORKER_CONCURRENCY, maxThreads: WORKER_CONCURRENCY });
  await Promise.all(Array.from({ length: WORKER_CONCURRENCY * 4 }, (_, i) => pool.run(i))); // warm
  let t0 = performance.now();
  await Promise.all(Array.from({ length: TASKS }, (_, i) => pool.run(i)));
  const direct = { tasksPerSecond: rate(TASKS, performance.now() - t0) };
  await pool.destroy();
  const { square } = (await import(MODULE)) as { square: Parameters<ReturnType<typeof createRunner>['addTask']>[0] };
  const runner = createRunner({ logger: silent, executors: { threads: { kind: 'worker', concurrency: WORKER_CONCURRENCY } } });
  runner.addTask(square);
  await runner.start();
  await Promise.all(await Promise.all(Array.from({ length: WORKER_CONCURRENCY * 4 }, async (_, i) => (await runner.submit<number, number>('square', i)).result()))); // warm
  t0 = performance.now();
  const handles: TaskHandle<number>[] = [];
  for (let i = 0; i < TASKS; i++) handles.push(await runner.submit<number, number>('square', i));
  await Promise.all(handles.map((h) => h.result()));
  const leasehold = { tasksPerSecond: rate(TASKS, performance.now() - t0) };
  await runner.stop();
  return { leasehold, direct };
}

async function commandsSince(redis: BenchRedis, before: number): Promise<number> {
  return (await redis.counters()).commands - before;
}

async function s6Queue(redis: BenchRedis): Promise<{ leasehold: ThroughputFigure; direct: ThroughputFigure }> {
  const url = new URL(redis.url);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  // BullMQ directly: a Queue that adds one job at a time, a Worker that runs them.
  const queue = new Queue('direct', { connection, prefix: 'direct' });
  let done = 0;
  let finished: () => void = () => {};
  const all = new Promise<void>((resolve) => (finished = resolve));
  const worker = new Worker('direct', async (job) => (job.data as { n: number }).n ** 2, { connection, prefix: 'direct', concurrency: QUEUE_CONCURRENCY, removeOnComplete: { count: 1_000 }, removeOnFail: { count: 1_000 } });
  worker.on('completed', () => {
    if (++done === TASKS) finished();
  });
  await worker.waitUntilReady();
  await sleep(500);
  let before = (await redis.counters()).commands;
  let t0 = performance.now();
  for (let i = 0; i < TASKS; i++) await queue.add('square', { n: i }, { removeOnComplete: { count: 1_000 }, removeOnFail: { count: 1_000 } });
  await all;
  const direct = { tasksPerSecond: rate(TASKS, performance.now() - t0), redisCommandsPerTask: round2((await commandsSince(redis, before)) / TASKS) };
  await worker.close();
  await queue.close();

  const runner = createRunner({ redisUrl: redis.url, prefix: 'lh', logger: silent, executors: { durable: { kind: 'queue', concurrency: QUEUE_CONCURRENCY } } });
  let ended = 0;
  let endedAll: () => void = () => {};
  const allEnded = new Promise<void>((resolve) => (endedAll = resolve));
  runner.on('taskEnded', () => {
    if (++ended === TASKS) endedAll();
  });
  const task = defineTask({ id: 'square', executor: 'durable', run: (n: number) => n * n });
  runner.addTask(task);
  await runner.start();
  await sleep(500);
  before = (await redis.counters()).commands;
  t0 = performance.now();
  for (let i = 0; i < TASKS; i++) await runner.submit(task, i);
  await allEnded;
  const leasehold = { tasksPerSecond: rate(TASKS, performance.now() - t0), redisCommandsPerTask: round2((await commandsSince(redis, before)) / TASKS) };
  await runner.stop();
  return { leasehold, direct };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Runs S6 (the kinds of `BENCH_S6_KINDS`, all by default). */
export async function runS6(log: (line: string) => void): Promise<S6Figures> {
  const kinds: S6Figures['kinds'] = {};
  let loopApiFloor: ThroughputFigure | undefined;
  if (S6_KINDS.includes('loop')) {
    log(`S6 loop: ${TASKS} tasks`);
    const { floor, ...loop } = await s6Loop();
    kinds.loop = { ...loop, concurrency: LOOP_CONCURRENCY };
    loopApiFloor = floor;
  }
  if (S6_KINDS.includes('worker')) {
    log(`S6 worker: ${TASKS} tasks`);
    kinds.worker = { ...(await s6Worker()), concurrency: WORKER_CONCURRENCY };
  }
  if (S6_KINDS.includes('queue')) {
    log(`S6 queue: ${TASKS} tasks`);
    const redis = await startBenchRedis();
    try {
      kinds.queue = { ...(await s6Queue(redis)), concurrency: QUEUE_CONCURRENCY };
    } finally {
      await redis.stop();
    }
  }
  return { tasks: TASKS, ...(loopApiFloor ? { loopApiFloor } : {}), kinds };
}

function quantiles(xs: number[]): { p50: number; p99: number; max: number; starts: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * q) - 1))] ?? 0;
  return { p50: Math.round(at(0.5) * 10) / 10, p99: Math.round(at(0.99) * 10) / 10, max: Math.round((s.at(-1) ?? 0) * 10) / 10, starts: s.length };
}

async function s7Once(onWorker: boolean): Promise<{ p50: number; p99: number; max: number; starts: number }> {
  const mod = (await import(MODULE)) as { heavyOnWorker: Parameters<ReturnType<typeof createRunner>['add']>[0]; burn: (ms: number) => number };
  const runner = createRunner({ logger: silent });
  runner.add(onWorker ? mod.heavyOnWorker : defineJob({ id: 'heavy', fixedRate: '1s', run: () => void mod.burn(200) }));
  for (let i = 0; i < 20; i++) runner.add(defineJob({ id: `light-${i}`, fixedRate: '1s', initialDelay: `${(i * 37) % 1000}ms`, run: () => {} }));
  const lateness: number[] = [];
  runner.on('runStarted', (e) => {
    if (e.jobId !== 'heavy') lateness.push(e.lagMs);
  });
  await runner.start();
  await sleep(S7_SECONDS * 1000);
  await runner.stop();
  return quantiles(lateness);
}

/** Runs S7. */
export async function runS7(log: (line: string) => void): Promise<S7Figures> {
  log(`S7: heavy job on the event loop, ${S7_SECONDS} s`);
  const onLoop = await s7Once(false);
  log(`S7: heavy job on a worker thread, ${S7_SECONDS} s`);
  const onWorker = await s7Once(true);
  return { seconds: S7_SECONDS, onLoop, onWorker };
}

/** S6 and S7 as tables. */
export function formatTaskTables(s6: S6Figures | undefined, s7: S7Figures | undefined): string {
  const out: string[] = [];
  if (s6) {
    out.push(`S6: ${s6.tasks} small tasks, leasehold against the library used directly`, '', '| kind | concurrency | leasehold tasks/s | direct tasks/s | ratio | Redis commands per task (leasehold / direct) |', '|---|---|---|---|---|---|');
    for (const [kind, f] of Object.entries(s6.kinds)) {
      const cmds = f.leasehold.redisCommandsPerTask === undefined ? '—' : `${f.leasehold.redisCommandsPerTask} / ${f.direct.redisCommandsPerTask ?? '?'}`;
      out.push(`| ${kind} | ${f.concurrency} | ${f.leasehold.tasksPerSecond} | ${f.direct.tasksPerSecond} | ${round2(f.leasehold.tasksPerSecond / f.direct.tasksPerSecond)} | ${cmds} |`);
    }
    const loop = s6.kinds.loop;
    if (s6.loopApiFloor && loop) {
      out.push('', `loop, a bare pool with the submission API alone (submit awaited, a handle and its result per task): ${s6.loopApiFloor.tasksPerSecond} tasks/s, ratio ${round2(s6.loopApiFloor.tasksPerSecond / loop.direct.tasksPerSecond)} to the direct pool`);
    }
  }
  if (s7) {
    out.push('', `S7: a 200 ms CPU-bound job every second beside 20 instance jobs every second, ${s7.seconds} s: the 20 jobs' start lateness, ms`, '', '| heavy job on | starts | p50 | p99 | max |', '|---|---|---|---|---|');
    out.push(`| the event loop | ${s7.onLoop.starts} | ${s7.onLoop.p50} | ${s7.onLoop.p99} | ${s7.onLoop.max} |`);
    out.push(`| a worker thread | ${s7.onWorker.starts} | ${s7.onWorker.p50} | ${s7.onWorker.p99} | ${s7.onWorker.max} |`);
  }
  return out.join('\n');
}
