/**
 * What every worker process shares: its configuration, the job body, the run recorder
 * (one line per run appended to the worker's own file), a counter of the commands its
 * Redis clients send, and the IPC loop that answers the harness.
 * @module
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { BODY_MS, isToWorker, type ClientCounts, type FromWorker, type WorkerConfig } from '../protocol.js';

/** Reads the worker's configuration from `BENCH_WORKER`. */
export function readConfig(): WorkerConfig {
  const raw = process.env['BENCH_WORKER'];
  if (raw === undefined) throw new Error('BENCH_WORKER is not set: workers are started by bench/run.ts');
  return JSON.parse(raw) as WorkerConfig;
}

/** Milliseconds since the epoch with sub-millisecond resolution. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Appends `job tick start` lines to the worker's file; synchronous, so a kill -9 loses nothing written. */
export type Recorder = (job: number, tickMs: number) => void;

/** Opens the recorder (a no-op when `file` is empty). */
export function openRecorder(file: string): { record: Recorder; close(): void } {
  if (file === '') return { record: () => undefined, close: () => undefined };
  const fd = openSync(file, 'a');
  return {
    record: (job, tickMs) => {
      writeSync(fd, `${job} ${tickMs} ${preciseNow().toFixed(2)}\n`);
    },
    close: () => closeSync(fd),
  };
}

/** The job body of every system: record the run, then sleep {@link BODY_MS}. */
export async function body(record: Recorder, job: number, tickMs: number): Promise<void> {
  record(job, tickMs);
  await sleep(BODY_MS);
}

interface SendCommand {
  sendCommand(this: Redis, command: { name?: string }, stream?: { isPipeline?: boolean }): unknown;
}

/**
 * Counts every command the ioredis clients of this process send (bullmq, redlock and
 * leasehold all use this one ioredis). A pipeline's commands reach `sendCommand` one by
 * one with the same pipeline stream, which counts as one batch.
 */
export function countCommands(): ClientCounts {
  const counts: ClientCounts = { commands: 0, batches: 0, byName: {} };
  const proto = Redis.prototype as unknown as SendCommand;
  const original = proto.sendCommand;
  const pipelines = new WeakSet<object>();
  proto.sendCommand = function (this: Redis, command, stream) {
    counts.commands++;
    const name = command.name ?? '?';
    counts.byName[name] = (counts.byName[name] ?? 0) + 1;
    if (stream?.isPipeline === true) {
      if (!pipelines.has(stream)) {
        pipelines.add(stream);
        counts.batches++;
      }
    } else {
      counts.batches++;
    }
    return original.call(this, command, stream);
  };
  return counts;
}

/** Options of {@link serve}. */
export interface ServeOptions {
  readonly counts: ClientCounts;
  /** System-specific counters for the snapshot. */
  readonly extra: () => Record<string, number>;
  /** Stops the system; the process then exits. */
  readonly stop: () => Promise<void>;
}

function send(message: FromWorker): void {
  process.send?.(message);
}

/** Tells the harness the worker is ready and answers its requests until told to stop. */
export function serve(opts: ServeOptions): void {
  process.on('message', (m: unknown) => {
    if (!isToWorker(m)) return;
    if (m.type === 'snapshot') {
      const cpu = process.cpuUsage();
      send({
        type: 'snapshot',
        seq: m.seq,
        snapshot: {
          cpuUs: cpu.user + cpu.system,
          rssBytes: process.memoryUsage.rss(),
          clients: { ...opts.counts, byName: { ...opts.counts.byName } },
          extra: opts.extra(),
          clockDriftMs: preciseNow() - Date.now(),
        },
      });
      return;
    }
    opts.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`stopping failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  });
  // The harness going away (or closing the channel) ends the worker.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready' });
}

/** Reports a failed start to the harness and exits. */
export function fail(err: unknown): never {
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stderr.write(`${message}\n`);
  if (process.send === undefined) process.exit(1);
  process.send({ type: 'failed', message } satisfies FromWorker, undefined, {}, () => process.exit(1));
  // Exit once the message is out; the callback does it.
  return undefined as never;
}
