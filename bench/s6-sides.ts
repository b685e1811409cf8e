/**
 * The sides S6 compares: leasehold's executors and what users would install instead, each
 * able to run `n` tasks and to resolve once every result is in.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import pLimit from 'p-limit';
import PQueue from 'p-queue';
import { Piscina } from 'piscina';
import { createRunner, defineTask, type TaskDefinition, type TaskHandle } from '../dist/index.js';

/** A side set up: it runs batches of tasks until it is closed. */
export interface Opened {
  /** Runs `n` tasks; resolves once every result is in. */
  run(n: number): Promise<void>;
  close(): Promise<void>;
}

/** One way of running a comparison's tasks. */
export interface Side {
  readonly name: string;
  /** The least ratio of leasehold's throughput to this side's that the targets ask for (none: a reference). */
  readonly target?: number;
  /** Queue: leasehold's Redis commands per task at most this many times this side's. */
  readonly commandsWithin?: number;
  open(): Promise<Opened>;
}

/** leasehold's default task timeout (README, executors): p-queue's timeout is set to the same. */
export const TASK_TIMEOUT_MS = 5 * 60_000;
const MODULE = new URL('./workers/tasks-module.mjs', import.meta.url).href;
const DIRECT = new URL('./workers/task-direct.mjs', import.meta.url).href;

/** A logger that drops everything: the figures are the benchmark's output. */
export const silent = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {}, child: () => silent, isLevelEnabled: () => false };

/** The loop's task: one turn of the microtask queue, then a small result. */
async function work(n: number): Promise<number> {
  await null;
  return n * n;
}

const each = <T>(n: number, f: (i: number) => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

/** Submits `n` tasks one after the other (each submit awaited, as a caller of `runner.submit` does), then awaits every result. */
async function submitAll<R>(n: number, submit: (i: number) => Promise<TaskHandle<R>>): Promise<void> {
  const handles: TaskHandle<R>[] = [];
  for (let i = 0; i < n; i++) handles.push(await submit(i));
  await Promise.all(handles.map((h) => h.result()));
}

const opened = (run: (n: number) => Promise<unknown>, close: () => Promise<void> = async () => {}): Opened => ({
  run: async (n) => void (await run(n)),
  close,
});

/** A bare in-memory pool with `runner.submit`'s shape: `submit` resolves to a handle whose `result()` is the task's. */
class BarePool {
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  private seq = 0;

  constructor(private readonly concurrency: number) {}

  submit<R>(run: () => Promise<R>): Promise<TaskHandle<R>> {
    let resolve!: (value: R) => void;
    let reject!: (error: unknown) => void;
    const done = new Promise<R>((res, rej) => ((resolve = res), (reject = rej)));
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

/** The loop executor and, against it, p-queue (with and without a per-task timeout), p-limit, a plain pool and the submission API alone. */
export function loopSides(concurrency: number): Side[] {
  return [
    {
      name: 'leasehold',
      async open() {
        const runner = createRunner({ logger: silent, executors: { io: { kind: 'loop', concurrency } } });
        const task = defineTask({ id: 'square', executor: 'io', run: (n: number) => work(n) });
        await runner.start();
        return opened((n) => submitAll(n, (i) => runner.submit(task, i)), () => runner.stop());
      },
    },
    {
      name: 'p-queue',
      target: 1,
      async open() {
        const queue = new PQueue({ concurrency });
        return opened((n) => each(n, (i) => queue.add(() => work(i))));
      },
    },
    {
      name: `p-queue with a ${TASK_TIMEOUT_MS / 60_000} min timeout`,
      target: 1,
      async open() {
        const queue = new PQueue({ concurrency, timeout: TASK_TIMEOUT_MS });
        return opened((n) => each(n, (i) => queue.add(() => work(i))));
      },
    },
    {
      name: 'p-limit',
      async open() {
        const limit = pLimit(concurrency);
        return opened((n) => each(n, (i) => limit(() => work(i))));
      },
    },
    {
      name: 'plain promise pool',
      async open() {
        return opened(async (n) => {
          let next = 0;
          await Promise.all(
            Array.from({ length: concurrency }, async () => {
              while (next < n) await work(next++);
            }),
          );
        });
      },
    },
    {
      name: 'submission API alone',
      async open() {
        const pool = new BarePool(concurrency);
        return opened((n) => submitAll(n, (i) => pool.submit(() => work(i))));
      },
    },
  ];
}

/** The worker executor and piscina used directly, both with `threads` threads, on the no-op task or a task burning `burnMs` of CPU. */
export function workerSides(threads: number, burnMs: number | undefined): Side[] {
  return [
    {
      name: 'leasehold',
      async open() {
        const mod = (await import(MODULE)) as { square: TaskDefinition<number, number>; burnTask: TaskDefinition<number, number> };
        const runner = createRunner({ logger: silent, executors: { threads: { kind: 'worker', concurrency: threads } } });
        runner.addTask(mod.square);
        runner.addTask(mod.burnTask);
        await runner.start();
        const submit = burnMs === undefined ? (i: number) => runner.submit(mod.square, i) : () => runner.submit(mod.burnTask, burnMs);
        return opened((n) => submitAll(n, submit), () => runner.stop());
      },
    },
    {
      name: 'piscina',
      target: burnMs === undefined ? 0.7 : 0.9,
      async open() {
        const pool = new Piscina({ filename: DIRECT, minThreads: threads, maxThreads: threads });
        const run = burnMs === undefined ? (i: number) => pool.run(i) : () => pool.run(burnMs, { name: 'burn' });
        return opened((n) => each(n, run), () => pool.destroy());
      },
    },
  ];
}

/** Resolves once a number of events (tasks ended, jobs completed) have been counted. */
class Countdown {
  private left = 0;
  private done: () => void = () => {};

  /** Resolves after `n` more calls of {@link tick}. */
  expect(n: number): Promise<void> {
    this.left = n;
    return new Promise<void>((resolve) => (this.done = resolve));
  }

  tick(): void {
    if (--this.left === 0) this.done();
  }
}

/**
 * The queue executor and BullMQ's Queue and Worker used directly, on the Redis at `redisUrl`;
 * each opened under its own prefix `round`, and given half a second to settle before it runs.
 */
export function queueSides(redisUrl: string, concurrency: number, round: () => number): Side[] {
  const url = new URL(redisUrl);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  const keep = { removeOnComplete: { count: 1_000 }, removeOnFail: { count: 1_000 } };
  return [
    {
      name: 'leasehold',
      async open() {
        const runner = createRunner({ redisUrl, prefix: `lh-${round()}`, logger: silent, executors: { durable: { kind: 'queue', concurrency } } });
        const task = defineTask({ id: 'square', executor: 'durable', run: (n: number) => n * n });
        runner.addTask(task);
        const ends = new Countdown();
        runner.on('taskEnded', () => ends.tick());
        await runner.start();
        await sleep(500);
        return opened(async (n) => {
          const done = ends.expect(n);
          for (let i = 0; i < n; i++) await runner.submit(task, i);
          await done;
        }, () => runner.stop());
      },
    },
    {
      name: 'BullMQ',
      target: 0.9,
      commandsWithin: 1.05,
      async open() {
        const prefix = `direct-${round()}`;
        const queue = new Queue('direct', { connection, prefix });
        const completions = new Countdown();
        const worker = new Worker('direct', async (job) => (job.data as { n: number }).n ** 2, { connection, prefix, concurrency, ...keep });
        worker.on('completed', () => completions.tick());
        await worker.waitUntilReady();
        await sleep(500);
        return opened(async (n) => {
          const done = completions.expect(n);
          for (let i = 0; i < n; i++) await queue.add('square', { n: i }, keep);
          await done;
        }, async () => {
          await worker.close();
          await queue.close();
        });
      },
    },
  ];
}
