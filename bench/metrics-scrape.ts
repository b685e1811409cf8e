/**
 * A scrape of `GET /metrics` on a node that has run every one of its jobs once, as a node of S8
 * (100,000 mostly hourly and daily jobs) has after a day: a local runner (`local: true`, no
 * Redis: the metrics are the node's own) of `BENCH_METRICS_JOBS` jobs (default 10,000 and
 * 100,000), each a `fixedRate` of an hour, which runs at start. Once every job has run, it
 * scrapes the registry four times and prints, for the default job limit (1,000) and for a
 * limit above the job count (every job with series of its own, as before the limit): the
 * scrape's time (the median of the last three, during which the event loop is blocked), its
 * size and lines, and the heap the node holds after a full collection.
 *
 *   npm run build && node --expose-gc --import tsx bench/metrics-scrape.ts
 * @module
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner } from '../dist/index.js';
import { median } from './s6.js';
import { silent } from './s6-sides.js';

const sizes = (process.env['BENCH_METRICS_JOBS'] ?? '10000,100000').split(',').map(Number);
const gc = (globalThis as { gc?: () => void }).gc;

async function measure(jobs: number, limit: number | undefined): Promise<string> {
  const runner = createRunner({ local: true, logger: silent, ...(limit === undefined ? {} : { metricsJobLimit: limit }) });
  let ran = 0;
  runner.on('runEnded', () => void ran++);
  for (let i = 0; i < jobs; i++) runner.add({ id: `job-${String(i).padStart(6, '0')}`, fixedRate: '1h', run: () => undefined });
  await runner.start();
  for (const deadline = Date.now() + 600_000; ran < jobs; await sleep(100)) {
    if (Date.now() > deadline) throw new Error(`${ran} of ${jobs} jobs ran in 10 min`);
  }
  const times: number[] = [];
  let text = '';
  for (let i = 0; i < 4; i++) {
    const t = performance.now();
    text = await runner.metrics.metrics();
    times.push(performance.now() - t);
  }
  gc?.();
  const heapMb = process.memoryUsage().heapUsed / 1e6;
  await runner.stop();
  const lines = text.split('\n').length;
  const label = limit === undefined ? 'default limit (1,000)' : `limit ${limit.toLocaleString('en-US')}`;
  return `${jobs.toLocaleString('en-US').padStart(8)} jobs, ${label.padEnd(24)} scrape ${median(times.slice(1)).toFixed(0).padStart(6)} ms  ${(text.length / 1e6).toFixed(1).padStart(6)} MB  ${lines.toLocaleString('en-US').padStart(10)} lines  heap ${heapMb.toFixed(0).padStart(4)} MB${gc ? '' : ' (no --expose-gc)'}`;
}

for (const jobs of sizes) {
  for (const limit of [undefined, 1_000_000]) console.log(await measure(jobs, limit));
}
