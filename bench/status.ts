/**
 * S4: latency of `GET /manage/jobs` on real `leasehold start` nodes, and the memory of one
 * process holding 10,000 jobs (leasehold's node, and the peers' workers for comparison).
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../test/helpers/redis.js';
import { spread, type Spread } from './analyze.js';
import { ROOT, spawnWorker } from './cluster.js';
import { BODY_MS, type SystemName } from './protocol.js';
import { startBenchRedis, type BenchRedis } from './redis.js';
import type { StatusScenario } from './scenarios.js';

/** Latency of one kind of request. */
export interface HttpFigures extends Spread {
  readonly requests: number;
  readonly errors: number;
  readonly statuses: Readonly<Record<string, number>>;
  readonly bodyBytes: number;
  /** The first request to a fresh node (slowest over the nodes), not among the others. */
  readonly firstMs?: number;
}

/** S4 figures of one system. */
export interface StatusFigures {
  /** `GET /manage/jobs` with `jobs` jobs on `processes` nodes; null when the route is not there. */
  readonly manageJobs: HttpFigures | null;
  /** RSS of one process holding `holdJobs` jobs, MB. */
  readonly holdRssMb: number | null;
  /** CPU of that process (every thread) while none of its jobs is due, ms per second. */
  readonly holdIdleCpuMsPerS?: number | null;
  readonly holdJobs: number;
  /** `GET /manage/jobs` on the node holding `holdJobs` jobs. */
  readonly manageJobsHold?: HttpFigures | null;
  /** RSS of that node after answering those requests, MB. */
  readonly holdRssAfterRequestsMb?: number | null;
  readonly note?: string;
}

const BIN = `${ROOT}bin/leasehold.js`;

/** A `leasehold start` node. */
interface CliNode {
  readonly child: ChildProcess;
  readonly port: number;
  readonly started: Promise<void>;
  /** kill -9 (nothing of a node is needed after S4 has read it). */
  kill(): Promise<void>;
  output(): string;
}

function startNode(redis: BenchRedis, prefix: string, index: number, port: number, jobs: number, cron: string): CliNode {
  const child = spawn(process.execPath, [BIN, 'start', '--jobs', 'bench/workers/status-jobs.mjs'], {
    cwd: ROOT,
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      LEASEHOLD_PREFIX: prefix,
      LEASEHOLD_INSTANCE_ID: `bench-${index}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      LEASEHOLD_SHUTDOWN_GRACE: '1s',
      BENCH_JOBS: String(jobs),
      BENCH_CRON: cron,
      BENCH_BODY_MS: String(BODY_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started = new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer): void => {
      out = (out + d.toString()).slice(-8000);
      if (out.includes('"leasehold runner started"')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then(() => reject(new Error(`leasehold node ${index} exited before it started: ${out}`)));
  });
  started.catch(() => undefined);
  process.once('exit', () => child.kill('SIGKILL'));
  return {
    child,
    port,
    started,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    output: () => out,
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One GET; rejects on a connection error. */
function request(port: number, path: string): Promise<{ status: number; ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const req = get({ host: '127.0.0.1', port, path, agent }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t, bytes }));
      res.on('error', reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
  });
}

/**
 * The time of the node's first answer to `path` (its cold request), or null when it does
 * not answer within `ms` or answers 404.
 */
async function firstAnswer(port: number, path: string, ms: number): Promise<number | null> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      const r = await request(port, path);
      return r.status === 404 ? null : Math.round(r.ms * 10) / 10;
    } catch {
      await sleep(100);
    }
  }
  return null;
}

/** Sends one request every `everyMs` for `forMs`, round robin over `ports`. */
async function measure(ports: readonly number[], path: string, forMs: number, everyMs: number): Promise<HttpFigures> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let bytes = 0;
  const t0 = Date.now();
  for (let i = 0; Date.now() - t0 < forMs; i++) {
    const due = t0 + i * everyMs;
    if (due > Date.now()) await sleep(due - Date.now());
    try {
      const r = await request(ports[i % ports.length] ?? 0, path);
      latencies.push(r.ms);
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status !== 200) errors++;
      bytes = Math.max(bytes, r.bytes);
    } catch {
      errors++;
    }
  }
  return { ...spread(latencies), requests: latencies.length, errors, statuses, bodyBytes: bytes };
}

/** User + system CPU of a process (every thread) from /proc, ms (null where /proc is not there). */
function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name: state is the first, utime the 12th, stime the 13th (clock ticks of 10 ms).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : null;
  } catch {
    return null;
  }
}

/** RSS of a process from /proc, MB (null where /proc is not there). */
function rssMb(pid: number): number | null {
  try {
    const kb = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isFinite(kb) ? Math.round((kb / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** Leasehold: the status API on 3 nodes with 1,000 jobs. */
async function statusLatency(s: StatusScenario): Promise<{ figures: HttpFigures | null; note?: string }> {
  const redis = await startBenchRedis();
  const nodes: CliNode[] = [];
  try {
    for (let i = 0; i < s.processes; i++) nodes.push(startNode(redis, 'bench-s4', i, await freePort(), s.jobs, s.cron));
    await Promise.all(nodes.map((n) => n.started));
    const ports = nodes.map((n) => n.port);
    const cold = await Promise.all(ports.map((p) => firstAnswer(p, '/manage/jobs', 3_000)));
    if (cold.some((c) => c === null)) return { figures: null, note: 'GET /manage/jobs is not served by `leasehold start` yet' };
    const figures = await measure(ports, '/manage/jobs', s.requestsForMs, s.requestEveryMs);
    return { figures: { ...figures, firstMs: Math.max(...cold.map((c) => c ?? 0)) } };
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await redis.stop();
  }
}

interface Hold {
  readonly rssMb: number | null;
  readonly idleCpuMsPerS: number | null;
  readonly manageJobs?: HttpFigures | null;
  readonly rssAfterRequestsMb?: number | null;
}

/** Every selected system holding 10,000 jobs at once, each in one process, on one Redis. */
async function holdMemory(s: StatusScenario, systems: readonly SystemName[]): Promise<Map<SystemName, Hold>> {
  const redis = await startBenchRedis();
  const out = new Map<SystemName, Hold>();
  const stops: Array<() => Promise<void>> = [];
  try {
    const pids = await Promise.all(
      systems.map(async (system) => {
        const prefix = `bench-hold-${system}`;
        if (system === 'leasehold') {
          const node = startNode(redis, prefix, 0, await freePort(), s.holdJobs, s.holdCron);
          stops.push(() => node.kill());
          await node.started;
          return { system, pid: node.child.pid ?? 0, port: node.port };
        }
        const w = spawnWorker({ system, index: 0, redisUrl: redis.url, prefix, jobs: s.holdJobs, cron: s.holdCron, periodMs: 3_600_000, leaseMs: 30_000, recordFile: '', setup: true });
        stops.push(() => {
          w.kill();
          return w.exited;
        });
        await w.ready;
        return { system, pid: w.pid, port: undefined };
      }),
    );
    await sleep(s.holdSettleMs);
    // Every RSS and the CPU with nothing due first, then the status of the leasehold node (which allocates).
    const before = pids.map((p) => cpuMs(p.pid));
    await sleep(s.holdIdleForMs);
    pids.forEach((p, i) => {
      const from = before[i];
      const to = cpuMs(p.pid);
      const idle = from === null || from === undefined || to === null ? null : Math.round(((to - from) / (s.holdIdleForMs / 1000)) * 10) / 10;
      out.set(p.system, { rssMb: rssMb(p.pid), idleCpuMsPerS: idle });
    });
    for (const p of pids) {
      if (p.port === undefined) continue;
      const first = await firstAnswer(p.port, '/manage/jobs', 3_000);
      const manageJobs = first === null ? null : { ...(await measure([p.port], '/manage/jobs', s.holdRequestsForMs, 50)), firstMs: first };
      const at = out.get(p.system);
      out.set(p.system, { rssMb: at?.rssMb ?? null, idleCpuMsPerS: at?.idleCpuMsPerS ?? null, manageJobs, rssAfterRequestsMb: rssMb(p.pid) });
    }
    return out;
  } finally {
    await Promise.all(stops.map((stop) => stop()));
    await redis.stop();
  }
}

/** Runs S4 for the selected systems. */
export async function runStatus(s: StatusScenario, systems: readonly SystemName[]): Promise<Partial<Record<SystemName, StatusFigures>>> {
  const latency = systems.includes('leasehold') ? await statusLatency(s) : undefined;
  const hold = await holdMemory(s, s.holdPeers ? systems : systems.filter((x) => x === 'leasehold'));
  const result: Partial<Record<SystemName, StatusFigures>> = {};
  for (const system of systems) {
    const h = hold.get(system);
    result[system] = {
      manageJobs: system === 'leasehold' ? (latency?.figures ?? null) : null,
      holdRssMb: h?.rssMb ?? null,
      holdIdleCpuMsPerS: h?.idleCpuMsPerS ?? null,
      holdJobs: s.holdJobs,
      ...(h?.manageJobs !== undefined ? { manageJobsHold: h.manageJobs, holdRssAfterRequestsMb: h.rssAfterRequestsMb ?? null } : {}),
      ...(system === 'leasehold' && latency?.note ? { note: latency.note } : system !== 'leasehold' ? { note: s.holdPeers ? 'no status API; RSS of one worker' : 'no status API; RSS measured in the full run only' } : {}),
    };
  }
  return result;
}
