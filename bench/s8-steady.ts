/**
 * What S8 costs Redis at steady state: three `leasehold start` nodes of S8's jobs module
 * (100,000 jobs, 1,000 every 10 s; `BENCH_S8_JOBS`, `BENCH_S8_FAST`), pages asked every 50 ms,
 * and from 45 s after the start (`BENCH_S8_STEADY_FROM`) for 120 s (`BENCH_S8_STEADY_SECONDS`,
 * two minute refreshes), Redis's CPU and its commands from `INFO commandstats`: the status reads'
 * (`HGETALL`, `HMGET`, `GET`, `PTTL`) and the scripts' (`EVALSHA`); and each node's RSS, read every
 * 5 s over the window (its median and its peak: one reading moves with the moment of V8's
 * collections).
 *
 *   npm run build && npx tsx bench/s8-steady.ts
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startRedis } from '../test/helpers/redis.js';
import { median } from './s6.js';
import { keepPaging, rssMb, spawnS8Node } from './s8.js';

const env = process.env;
const jobs = env['BENCH_S8_JOBS'] ?? '100000';
const fromS = Number(env['BENCH_S8_STEADY_FROM'] ?? 45);
const seconds = Number(env['BENCH_S8_STEADY_SECONDS'] ?? 120);

const redis = await startRedis();
const client = redis.client();
const ports = await Promise.all([0, 1, 2].map(() => freePort()));
const nodes = ports.map((port, i) => spawnS8Node(redis.url, i, port, { jobs, fast: env['BENCH_S8_FAST'] ?? '1000', output: 'ignore' }));
const stopPaging = keepPaging(ports, Number(jobs));
try {
  const cpu = async (): Promise<number> => {
    const info = await client.info('cpu');
    return Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]);
  };
  await sleep(fromS * 1_000);
  await client.config('RESETSTAT');
  const before = await cpu();
  const rss = nodes.map(() => [] as number[]);
  for (let t = 0; t < seconds; t += 5) {
    await sleep(Math.min(5, seconds - t) * 1_000);
    nodes.forEach((n, i) => rss[i]?.push(rssMb(n.pid)));
  }
  const used = (await cpu()) - before;
  const stats = await client.info('commandstats');
  const of = (command: string): string => {
    const m = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(stats);
    return m ? `${command} ${Number(m[1]).toLocaleString('en')} calls, ${(Number(m[2]) / 1e6).toFixed(2)} s` : `${command} none`;
  };
  const total = [...stats.matchAll(/calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  console.log(`S8 at steady state, ${seconds} s from ${fromS} s after the start: Redis CPU ${used.toFixed(1)} s, ${total.toLocaleString('en')} commands`);
  for (const c of ['hgetall', 'hmget', 'get', 'pttl', 'evalsha']) console.log(`  ${of(c)}`);
  console.log(`  RSS per node, median and peak of readings every 5 s: ${rss.map((r) => `${median(r)} and ${Math.max(...r)} MB`).join('; ')}`);
} finally {
  stopPaging();
  for (const n of nodes) n.kill('SIGKILL');
  await redis.stop();
}
