// The leasehold side of S6 and S7: the tasks and the heavy job, loaded again in worker threads.
import { defineJob, defineTask } from '../../dist/index.js';
import { burn } from './burn.mjs';

export { burn };

export const square = defineTask({ id: 'square', executor: 'threads', module: import.meta.url, run: (n) => n * n });

export const burnTask = defineTask({ id: 'burn', executor: 'threads', module: import.meta.url, run: (ms) => burn(ms) });

export const heavyOnWorker = defineJob({ id: 'heavy', fixedRate: '1s', thread: 'worker', module: import.meta.url, run: () => void burn(200) });
