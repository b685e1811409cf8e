/**
 * Example jobs that `npm start` and `npm run demo` run. Each shows one feature.
 */
import { defineJob } from 'leasehold';

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason as Error);
    }, { once: true });
  });

export default [
  // Once per tick for the whole installation, on a cron read in Berlin time.
  defineJob({
    id: 'digest',
    scope: 'installation',
    cron: '*/10 * * * * *',
    zone: 'Europe/Berlin',
    lease: '20s',
    async run(ctx) {
      ctx.log.info({ tick: ctx.scheduledAt.toISOString(), fencingToken: ctx.fencingToken }, 'sending the digest');
      await sleep(200, ctx.signal);
    },
  }),

  // Once per second for the whole installation: the grid is shared by every node.
  defineJob({
    id: 'rollup',
    scope: 'installation',
    fixedRate: '1s',
    lease: '10s',
    async run(ctx) {
      await sleep(50, ctx.signal);
    },
  }),

  // On every node: each keeps its own local cache fresh.
  defineJob({
    id: 'refresh-local-cache',
    fixedRate: '15s',
    async run(ctx) {
      ctx.log.debug('cache refreshed');
    },
  }),

  // Fails now and then: the status shows the failures, the log only the first and the recovery.
  defineJob({
    id: 'flaky-sync',
    scope: 'installation',
    fixedDelay: '3s',
    async run() {
      if (Math.random() < 0.3) throw new Error('the partner API answered 503');
    },
  }),

  // CPU-heavy: on a worker thread it stalls neither the other jobs nor the lease watchers. The
  // CLI loads this module in the thread; a timeout or a lost lease terminates the thread.
  defineJob({
    id: 'recompute-scores',
    scope: 'installation',
    fixedRate: '30s',
    thread: 'worker',
    timeout: '20s',
    run(ctx) {
      let score = 0;
      for (let i = 0; i < 5_000_000; i++) score = (score * 31 + i) % 1_000_003;
      ctx.log.info({ score }, 'scores recomputed on a worker thread');
    },
  }),

  // Honours its signal: a timeout, a lost lease or a shutdown stops it between batches.
  defineJob({
    id: 'export-batches',
    scope: 'installation',
    cron: '0 * * * * *',
    timeout: '20s',
    lease: '10s',
    async run(ctx) {
      for (let batch = 1; batch <= 10; batch++) {
        ctx.signal.throwIfAborted();
        await sleep(300, ctx.signal);
      }
      ctx.log.info({ fencingToken: ctx.fencingToken }, 'exported 10 batches');
    },
  }),
];
