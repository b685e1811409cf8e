// The leasehold side of S6 and S7: the tasks and the heavy job, loaded again in worker threads.
import { performance } from 'node:perf_hooks';
import { defineJob, defineTask } from '../../dist/index.js';

export const square = defineTask({ id: 'square', executor: 'threads', module: import.meta.url, run: (n) => n * n });

/** Burns `ms` of CPU without yielding. */
export function burn(ms) {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x++;
  return x;
}

export const heavyOnWorker = defineJob({ id: 'heavy', fixedRate: '1s', thread: 'worker', module: import.meta.url, run: () => void burn(200) });
