/**
 * One node's status read of S8's size, alone: 100,000 jobs (`BENCH_S8_JOBS`) registered in a
 * fresh `redis-server`, a daily cron each, 1 in 100 holding a lease; a reader that read them
 * once (so that it knows them, as a node that serves the status does) reads them ten times more.
 * Prints the median and the fastest read and, for one read, the commands Redis ran by name and
 * how many the node sent (those inside a script call are Redis's, not round trips).
 *
 *   npx tsx bench/s8-read.ts
 * @module
 */
import { performance } from 'node:perf_hooks';
import { keys as keyNames } from '../src/redis/keys.js';
import { KnownJobs } from '../src/status/known.js';
import { readCluster } from '../src/status/read.js';
import { startRedis } from '../test/helpers/redis.js';
import { median } from './s6.js';

const jobs = Number(process.env['BENCH_S8_JOBS'] ?? 100_000);
const server = await startRedis();
const redis = server.client();
try {
  const k = keyNames('s8-read');
  const at = new Date().toISOString();
  for (let from = 0; from < jobs; from += 5_000) {
    const p = redis.pipeline();
    for (let i = from; i < Math.min(jobs, from + 5_000); i++) {
      const id = `job-${String(i).padStart(6, '0')}`;
      p.sadd(k.jobs, id);
      p.hset(k.stats(id), { scope: 'installation', scheduleKind: 'cron', schedule: '0 0 0 * * *', zone: 'UTC', description: `job ${i}`, runs: String(i % 50), succeeded: String(i % 50), version: '3', createdAt: at, seenAt: at, lastOutcome: 'succeeded', lastStartedAt: at, lastSuccessAt: at, nextDueAt: at, streak: '0' });
      if (i % 100 === 0) p.set(k.lease(id), `node-1 since ${at} tick ${at} token ${i + 1}`, 'PX', 600_000);
    }
    await p.exec();
  }
  const known = new KnownJobs();
  await readCluster(redis, k, { known });
  const ms: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t = performance.now();
    await readCluster(redis, k, { known });
    ms.push(performance.now() - t);
  }
  await redis.config('RESETSTAT');
  await readCluster(redis, k, { known });
  const ran: Record<string, number> = {};
  for (const m of (await redis.info('commandstats')).matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (m[1] !== 'config') ran[m[1] ?? ''] = Number(m[2]);
  // versions.lua runs an HMGET and a PTTL per job it is given, and a GET per lease among them.
  const scripted = ran['evalsha'] ? (ran['hmget'] ?? 0) : 0;
  const inScripts = scripted * 2 + (ran['evalsha'] ? Math.round(scripted / 100) : 0);
  const total = Object.values(ran).reduce((a, b) => a + b, 0);
  console.log(`read of ${jobs.toLocaleString('en')} known jobs: median ${median(ms).toFixed(0)} ms, fastest ${Math.min(...ms).toFixed(0)} ms`);
  console.log(`one read: ${total.toLocaleString('en')} commands run, ${(total - inScripts).toLocaleString('en')} sent (${Object.entries(ran).map(([c, n]) => `${c} ${n}`).join(', ')})`);
} finally {
  redis.disconnect();
  await server.stop();
}
