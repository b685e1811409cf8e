/**
 * What a backup claimer's check costs Redis: n jobs whose tick another node claimed already,
 * checked by the backup again and again, once through the claim script (`claim.lua` answers
 * `done`) and once through a read of each job's last claimed tick (a pipeline of `HGET`s), in
 * turns. Prints Redis's CPU (`INFO cpu`) and its time inside commands (`INFO commandstats`) per
 * tick checked, for each n (`BENCH_BACKUP_JOBS`, default 4, 7 and 333: a node's share of a tick
 * in S5 at 27 nodes, in S1 and in S3).
 *
 *   npx tsx bench/backup-read.ts
 * @module
 */
import { createLeaseStore } from '../src/lease/lease.js';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys } from '../src/redis/keys.js';
import { startBenchRedis } from './redis.js';

const sizes = (process.env['BENCH_BACKUP_JOBS'] ?? '4,7,333').split(',').map(Number);
const server = await startBenchRedis();
const lease = createRedis({ url: server.url, role: 'lease' });
try {
  await whenReady(lease, 5_000);
  for (const n of sizes) {
    const k = keys(`backup-read-${n}`);
    const first = createLeaseStore(lease, k);
    const backup = createLeaseStore(lease, k);
    const tick = Math.floor(Date.now() / 1000) * 1000 - 1000;
    const jobs = Array.from({ length: n }, (_, i) => `job-${i}`);
    await Promise.all(jobs.map((jobId) => first.claim({ jobId, tick, leaseMs: 600_000, holder: 'first', mode: 'grid' })));
    const rounds = Math.max(20, Math.round(20_000 / n));
    for (const read of [false, true, false, true]) {
      const before = await server.counters();
      for (let r = 0; r < rounds; r++) {
        const answers = await Promise.all(jobs.map((jobId) => backup.claim({ jobId, tick, leaseMs: 600_000, holder: 'backup', mode: 'grid', backup: read })));
        if (answers.some((a) => a.kind !== 'done')) throw new Error('a tick claimed already was not answered done');
      }
      const after = await server.counters();
      const per = (ms: number): string => ((ms / (rounds * n)) * 1000).toFixed(1);
      console.log(`${String(n).padStart(4)} jobs  ${read ? 'read  ' : 'script'}  Redis CPU ${per(after.cpuMs - before.cpuMs)} µs, inside commands ${per(after.execMs - before.execMs)} µs per tick checked`);
    }
  }
} finally {
  lease.disconnect();
  await server.stop();
}
