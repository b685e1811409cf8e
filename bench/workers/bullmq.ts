/**
 * A BullMQ node for the benchmark: one job scheduler per job id (created by the first
 * process), one Worker per process with enough concurrency for every job at once, the
 * shared job body. A scheduler's job id ends in the tick it was made for.
 * @module
 */
import { Queue, Worker, type Job } from 'bullmq';
import { jobId } from '../protocol.js';
import { body, countCommands, fail, openRecorder, readConfig, serve } from './kit.js';

interface Data {
  readonly i: number;
}

/** The tick a scheduler's job stands for: `repeat:<scheduler>:<ms>`, or its `prevMillis`. */
function tickOf(job: Job<Data>): number {
  const fromId = Number(job.id?.slice(job.id.lastIndexOf(':') + 1));
  return Number.isFinite(fromId) && fromId > 0 ? fromId : (job.opts.prevMillis ?? job.timestamp);
}

async function main(): Promise<void> {
  const config = readConfig();
  const counts = countCommands();
  const url = new URL(config.redisUrl);
  const connection = { host: url.hostname, port: Number(url.port) };
  const recorder = openRecorder(config.recordFile);
  if (config.setup) {
    const queue = new Queue<Data>(config.prefix, { connection, prefix: 'bench' });
    const ids = Array.from({ length: config.jobs }, (_, i) => i);
    // Created in slices so 10,000 schedulers do not open 10,000 requests at once.
    for (let from = 0; from < ids.length; from += 1_000) {
      await Promise.all(
        ids.slice(from, from + 1_000).map((i) =>
          queue.upsertJobScheduler(jobId(i), { pattern: config.cron }, { name: jobId(i), data: { i }, opts: { removeOnComplete: true, removeOnFail: true } }),
        ),
      );
    }
    await queue.close();
  }
  const worker = new Worker<Data>(config.prefix, (job) => body(recorder.record, job.data.i, tickOf(job)), {
    connection,
    prefix: 'bench',
    concurrency: config.jobs,
    lockDuration: config.leaseMs,
    stalledInterval: config.leaseMs,
  });
  const extra = { failed: 0, stalled: 0 };
  worker.on('failed', () => extra.failed++);
  worker.on('stalled', () => extra.stalled++);
  worker.on('error', (err) => process.stderr.write(`bullmq worker: ${err.message}\n`));
  await worker.waitUntilReady();
  serve({
    counts,
    extra: () => ({ ...extra }),
    stop: async () => {
      await worker.close();
      recorder.close();
    },
  });
}

main().catch(fail);
