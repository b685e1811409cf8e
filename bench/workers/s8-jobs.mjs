/**
 * The jobs module of S8 (`leasehold start --jobs`): `BENCH_JOBS` installation jobs, most of
 * them daily or hourly crons, `BENCH_FAST` of them every 10 s. Each run of a 10 s job counts
 * itself in the hash `s8:runs` (field `<id>@<tick>`) and the node's first run in `s8:first`,
 * through a connection of its own (`BENCH_REDIS_URL`), so that the harness counts duplicates
 * and misses tick by tick. Plain JavaScript, as a node runs in production.
 * @module
 */
import { Redis } from 'ioredis';

const count = Number(process.env['BENCH_JOBS'] ?? '100000');
const fast = Number(process.env['BENCH_FAST'] ?? '1000');
const instance = process.env['LEASEHOLD_INSTANCE_ID'] ?? 'node';
const redis = new Redis(process.env['BENCH_REDIS_URL'] ?? process.env['REDIS_URL'] ?? '', { lazyConnect: false, maxRetriesPerRequest: 2 });
let first = true;

function schedule(i) {
  if (i < fast) return '*/10 * * * * *';
  // The rest: half hourly, half daily, spread over the minutes and hours.
  return i % 2 === 0 ? `0 ${i % 60} * * * *` : `0 ${i % 60} ${i % 24} * * *`;
}

export default Array.from({ length: count }, (_, i) => ({
  id: `job-${String(i).padStart(6, '0')}`,
  description: i < fast ? `every 10 s, number ${i}` : `report ${i}`,
  scope: 'installation',
  cron: schedule(i),
  run: async (ctx) => {
    if (i >= fast) return;
    const multi = redis.multi().hincrby('s8:runs', `${i}@${ctx.scheduledAt.getTime()}`, 1);
    if (first) {
      first = false;
      multi.hsetnx('s8:first', instance, String(Date.now()));
    }
    await multi.exec();
  },
}));
