/**
 * S8, a large installation, in a form that runs on one machine: `BENCH_S8_JOBS` jobs (default
 * 100,000) on `BENCH_S8_NODES` `leasehold start` processes (default 3), `BENCH_S8_FAST` of them
 * (default 1,000) every 10 s, the rest daily or hourly crons (bench/workers/s8-jobs.mjs).
 * Measures each node's start (spawn to the runner started, and to its first run of a 10 s job),
 * its RSS, Redis's memory per job (`used_memory` grown from the empty server, less the harness's
 * own record of runs, over the jobs), `GET /manage/jobs?limit=100` (a page at a cursor, a search)
 * round robin over the nodes while the 10 s ticks come due, and the duplicates and misses of the
 * 10 s jobs tick by tick over the window.
 *
 *   npm run build && npx tsx bench/s8.ts          # or BENCH_SCENARIOS=S8 npm run bench
 *
 * Writes bench/results/s8.json (`BENCH_S8_OUT`).
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Agent, get } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { keys } from '../src/redis/keys.js';
import { DEFAULT_RECENT_RUNS } from '../src/redis/record.js';
import { freePort, startRedis } from '../test/helpers/redis.js';
import { spread, type Spread } from './analyze.js';
import { ROOT } from './cluster.js';

/** S8's figures. */
export interface S8Figures {
  readonly jobs: number;
  readonly nodes: number;
  readonly fastJobs: number;
  /** Per node: spawn to "leasehold runner started", and to its first run, ms; RSS, MB. */
  readonly startMs: number[];
  readonly firstRunMs: Array<number | null>;
  readonly rssMb: number[];
  readonly redisBytesPerJob: number;
  /**
   * Bytes a recent run takes in a job's list (the 10 s jobs' lists after the window, key
   * overhead included), and how many a job keeps (the default `recentRuns`): a job's share of
   * Redis grows by their product once it has run that often, as the daily and hourly jobs do.
   */
  readonly redisBytesPerRun: number;
  readonly recentRuns: number;
  readonly page: Spread & { readonly requests: number; readonly errors: number; readonly bytes: number };
  readonly ticks: number;
  readonly duplicates: number;
  readonly misses: number;
  readonly windowS: number;
}

const count = (v: string | undefined, fallback: number): number => (v === undefined || v === '' ? fallback : Number(v));

interface Node {
  readonly child: ChildProcess;
  readonly port: number;
  readonly spawnedAt: number;
  readonly started: Promise<number>;
}

/** What an S8 node runs: `jobs` jobs of bench/workers/s8-jobs.mjs, `fast` of them every 10 s. */
export interface S8NodeOptions {
  readonly jobs: number | string;
  readonly fast: number | string;
  /** Node's own flags (an inspector, say). */
  readonly flags?: readonly string[];
  /** Its output piped (to wait for its start) or dropped. */
  readonly output?: 'pipe' | 'ignore';
}

/** Spawns S8 node `index` (instance `s8-<index>`) on `port`; it is killed when this process exits. */
export function spawnS8Node(redisUrl: string, index: number, port: number, opts: S8NodeOptions): ChildProcess {
  const child = spawn(process.execPath, [...(opts.flags ?? []), `${ROOT}bin/leasehold.js`, 'start', '--jobs', 'bench/workers/s8-jobs.mjs'], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: redisUrl, BENCH_REDIS_URL: redisUrl, LEASEHOLD_PREFIX: 's8', LEASEHOLD_INSTANCE_ID: `s8-${index}`, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', BENCH_JOBS: String(opts.jobs), BENCH_FAST: String(opts.fast) },
    stdio: ['ignore', opts.output ?? 'pipe', opts.output ?? 'pipe'],
  });
  process.once('exit', () => child.kill('SIGKILL'));
  return child;
}

/**
 * Asks the nodes on `ports` for pages of 100 jobs, round robin, every 50 ms, each at another
 * cursor over `jobs` jobs, until the returned function is called.
 */
export function keepPaging(ports: readonly number[], jobs: number): () => void {
  let paging = true;
  void (async () => {
    for (let i = 0; paging; i++) {
      const cursor = Buffer.from(`job-${String((i * 2_000) % jobs).padStart(6, '0')}`).toString('base64url');
      await request(ports[i % ports.length] ?? 0, `/manage/jobs?limit=100&cursor=${cursor}`).catch(() => undefined);
      await sleep(50);
    }
  })();
  return () => {
    paging = false;
  };
}

function startNode(redisUrl: string, index: number, port: number, jobs: number, fast: number): Node {
  const spawnedAt = Date.now();
  const child = spawnS8Node(redisUrl, index, port, { jobs, fast });
  let out = '';
  const started = new Promise<number>((resolve, reject) => {
    const onData = (d: Buffer): void => {
      out = (out + d.toString()).slice(-8000);
      if (out.includes('"leasehold runner started"')) resolve(Date.now() - spawnedAt);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', () => reject(new Error(`node ${index} exited: ${out}`)));
  });
  return { child, port, spawnedAt, started };
}

/** A process's resident set, MB. */
export function rssMb(pid: number | undefined): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m?.[1] ?? 0) / 1024);
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

function request(port: number, path: string): Promise<{ status: number; ms: number; bytes: number; body: string }> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const req = get({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t, bytes: Buffer.byteLength(body), body }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
  });
}

/** Runs S8 and returns its figures. */
export async function runS8(env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<S8Figures> {
  const jobs = count(env['BENCH_S8_JOBS'], 100_000);
  const nodes = count(env['BENCH_S8_NODES'], 3);
  const fast = count(env['BENCH_S8_FAST'], 1_000);
  const windowS = count(env['BENCH_S8_SECONDS'], 60);
  const redis = await startRedis();
  const client = redis.client();
  const ports = await Promise.all(Array.from({ length: nodes }, () => freePort()));
  const usedMemory = async (): Promise<number> => Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1] ?? 0);
  const emptyBytes = await usedMemory();
  log(`S8: ${jobs} jobs (${fast} every 10 s) on ${nodes} nodes`);
  const procs = ports.map((port, i) => startNode(redis.url, i, port, jobs, fast));
  try {
    const startMs = await Promise.all(procs.map((p) => p.started));
    log(`S8: nodes started in ${startMs.join(', ')} ms`);
    // Every job's stats in Redis and every node's status answering: a page says how many.
    for (const deadline = Date.now() + 300_000; ; ) {
      const totals = await Promise.all(procs.map((p) => request(p.port, '/manage/jobs?limit=1').then((r) => (r.status === 200 ? (JSON.parse(r.body) as { total: number }).total : 0), () => 0)));
      // The last job's stats hash, described, straight from Redis (a node's status may be a snapshot behind).
      const described = await client.hget(keys('s8').stats(`job-${String(jobs - 1).padStart(6, '0')}`), 'description');
      if (totals.every((t) => t === jobs) && described !== null && described !== '') break;
      if (Date.now() > deadline) throw new Error(`the nodes list ${totals.join(', ')} jobs after 5 min`);
      await sleep(1_000);
    }
    const firsts = await client.hgetall('s8:first');
    const firstRunMs = procs.map((p, i) => (firsts[`s8-${i}`] ? Number(firsts[`s8-${i}`]) - p.spawnedAt : null));
    const redisBytesPerJob = Math.round((await usedMemory() - emptyBytes - Number((await client.memory('USAGE', 's8:runs')) ?? 0) - Number((await client.memory('USAGE', 's8:first')) ?? 0)) / jobs);

    // The window: pages while the 10 s ticks come due; the ticks judged are the whole ones in it.
    const from = Math.ceil((Date.now() + 1_000) / 10_000) * 10_000;
    const to = from + windowS * 1_000;
    await sleep(Math.max(0, from - Date.now()));
    const latencies: number[] = [];
    let errors = 0;
    let bytes = 0;
    const cursors = Array.from({ length: 50 }, (_, i) => Buffer.from(`job-${String(Math.floor((i * jobs) / 50)).padStart(6, '0')}`).toString('base64url'));
    for (let i = 0; Date.now() < to; i++) {
      const due = from + i * 50;
      if (due > Date.now()) await sleep(due - Date.now());
      const path = i % 10 === 9 ? `/manage/jobs?limit=100&q=${i % 1000}` : `/manage/jobs?limit=100&cursor=${cursors[i % cursors.length] ?? ''}`;
      try {
        const r = await request(procs[i % procs.length]?.port ?? 0, path);
        if (r.status !== 200) errors++;
        else latencies.push(r.ms);
        bytes = Math.max(bytes, r.bytes);
      } catch {
        errors++;
      }
    }
    const rss = procs.map((p) => rssMb(p.child.pid));
    await sleep(5_000); // the last ticks' runs are recorded
    const runs = await client.hgetall('s8:runs');
    let duplicates = 0;
    let misses = 0;
    let ticks = 0;
    for (let tick = from; tick < to; tick += 10_000) {
      for (let j = 0; j < fast; j++) {
        ticks++;
        const n = Number(runs[`${j}@${tick}`] ?? 0);
        if (n === 0) misses++;
        else duplicates += n - 1;
      }
    }
    let runBytes = 0;
    let runEntries = 0;
    for (let j = 0; j < Math.min(fast, 50); j++) {
      const key = keys('s8').runs(`job-${String(j).padStart(6, '0')}`);
      runBytes += Number((await client.memory('USAGE', key)) ?? 0);
      runEntries += await client.llen(key);
    }
    const s = spread(latencies);
    return { jobs, nodes, fastJobs: fast, startMs, firstRunMs, rssMb: rss, redisBytesPerJob, redisBytesPerRun: runEntries > 0 ? Math.round(runBytes / runEntries) : 0, recentRuns: DEFAULT_RECENT_RUNS, page: { ...s, requests: latencies.length + errors, errors, bytes }, ticks, duplicates, misses, windowS };
  } finally {
    for (const p of procs) p.child.kill('SIGKILL');
    await redis.stop();
  }
}

/** S8 as lines of text, with the targets. */
export function formatS8(f: S8Figures): string {
  const mark = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  // Ready for its first tick once its runner started; the first run then waits for the next `*/10` tick.
  const maxStart = Math.max(...f.startMs);
  return [
    `S8: ${f.jobs} jobs on ${f.nodes} nodes, ${f.fastJobs} every 10 s, ${f.windowS} s window`,
    `page of 100 p50 ${f.page.p50} ms, p99 ${f.page.p99} ms over ${f.page.requests} requests (${f.page.errors} errors) — target p99 <= 20 ms: ${mark(f.page.p99 <= 20)}`,
    `start to runner started ${f.startMs.join(', ')} ms — target <= 10 s: ${mark(maxStart <= 10_000)}; to first run (the next */10 tick after) ${f.firstRunMs.join(', ')} ms`,
    `RSS ${f.rssMb.join(', ')} MB — target <= 300 MB: ${mark(Math.max(...f.rssMb) <= 300)}`,
    `Redis ${f.redisBytesPerJob} bytes per job — target <= 2048: ${mark(f.redisBytesPerJob <= 2048)}`,
    `Redis once every job keeps its ${f.recentRuns} recent runs (${f.redisBytesPerRun} bytes each): ${f.redisBytesPerJob + f.recentRuns * f.redisBytesPerRun} bytes per job — target <= 2048: ${mark(f.redisBytesPerJob + f.recentRuns * f.redisBytesPerRun <= 2048)}`,
    `10 s jobs: ${f.ticks} ticks, ${f.duplicates} duplicates, ${f.misses} misses — target 0 and 0: ${mark(f.duplicates === 0 && f.misses === 0)}`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.env['BENCH_S8_OUT'] ?? fileURLToPath(new URL('./results/s8.json', import.meta.url));
  runS8(process.env, (l) => void process.stderr.write(`${l}\n`))
    .then(async (f) => {
      await writeFile(out, `${JSON.stringify(f, null, 2)}\n`);
      process.stdout.write(`${formatS8(f)}\n\nwritten to ${out}\n`);
    })
    .catch((err: unknown) => {
      process.stderr.write(`S8: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    });
}
