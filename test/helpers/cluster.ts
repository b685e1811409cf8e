/**
 * A private Redis Cluster for a test file: `redis-server --cluster-enabled yes` processes on
 * free loopback ports (each with its own cluster bus port), joined with
 * `redis-cli --cluster create`, and the means to fail a master over or kill it.
 * @module
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { spawnLeasehold, type NodeProc } from './node.js';
import { freePort, startRedis, type TestRedis } from './redis.js';

const run = promisify(execFile);

/** Options for {@link startCluster}. */
export interface StartClusterOptions {
  /** Number of masters; default 3 (the smallest cluster `redis-cli` creates). */
  masters?: number;
  /** Replicas per master; default 1 (a master can then fail over). */
  replicas?: number;
  /** `cluster-node-timeout` in ms: how long a master may be unreachable before its replica takes over. Default 1000. */
  nodeTimeoutMs?: number;
}

/** A running cluster. */
export interface TestCluster {
  /** Every server, masters first as created (their roles change with failovers). */
  readonly servers: TestRedis[];
  /** `127.0.0.1:<port>` of every server, for REDIS_CLUSTER_NODES. */
  readonly seeds: string[];
  /** A plain connection to one server (not a cluster client); closed by {@link stop}. */
  node(port: number): Redis;
  /** The port of the master serving `key` now. */
  masterOf(key: string): Promise<number>;
  /** The ports of the current masters. */
  masters(): Promise<number[]>;
  /**
   * Waits until every running node sees all slots served (`cluster_state:ok`) by `expected`
   * masters, none of them on a port in `gone`; throws after `ms`.
   */
  waitHealthy(ms?: number, expected?: number, gone?: number[]): Promise<void>;
  /** Kills every server and removes its files. */
  stop(): Promise<void>;
}

interface NodeLine {
  id: string;
  port: number;
  flags: string[];
  masterId: string;
  slots: string[];
}

function parseNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const [id = '', addr = '', flags = '', masterId = '', , , , , ...slots] = line.trim().split(' ');
      return { id, port: Number(addr.split('@')[0]?.split(':')[1]), flags: flags.split(','), masterId, slots };
    });
}

/** Starts a cluster and waits until it serves every slot. */
export async function startCluster(opts: StartClusterOptions = {}): Promise<TestCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 1;
  const nodeTimeoutMs = opts.nodeTimeoutMs ?? 1_000;
  const servers: TestRedis[] = [];
  const clients: Redis[] = [];
  const stop = async (): Promise<void> => {
    for (const c of clients.splice(0)) c.disconnect();
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      servers.push(
        await startRedis({
          args: [
            '--cluster-enabled', 'yes',
            '--cluster-port', String(await freePort()),
            '--cluster-node-timeout', String(nodeTimeoutMs),
            // A replica may take over however long it was cut off: the tests kill masters.
            '--cluster-replica-validity-factor', '0',
          ],
        }),
      );
    }
    const seeds = servers.map((s) => `127.0.0.1:${s.port}`);
    await run('redis-cli', ['--cluster', 'create', ...seeds, '--cluster-replicas', String(replicas), '--cluster-yes'], { timeout: 30_000 });
    const node = (port: number): Redis => {
      const c = new Redis(port, '127.0.0.1', { lazyConnect: false, maxRetriesPerRequest: 1 });
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    };
    const nodesOf = async (port: number): Promise<NodeLine[]> => parseNodes(String(await node(port).call('CLUSTER', 'NODES')));
    const alive = async (): Promise<TestRedis[]> => {
      const out: TestRedis[] = [];
      for (const s of servers) {
        const probe = new Redis(s.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 300 });
        probe.on('error', () => undefined);
        try {
          await probe.connect();
          await probe.ping();
          out.push(s);
        } catch {
          // not running (killed by the test): not asked
        } finally {
          probe.disconnect();
        }
      }
      return out;
    };
    const masterPorts = async (): Promise<number[]> => {
      const [first] = await alive();
      if (!first) throw new Error('no cluster node is running');
      return (await nodesOf(first.port)).filter((n) => n.flags.includes('master') && !n.flags.includes('fail') && n.slots.length > 0).map((n) => n.port);
    };
    const cluster: TestCluster = {
      servers,
      seeds,
      node,
      async masterOf(key) {
        const [first] = await alive();
        if (!first) throw new Error('no cluster node is running');
        const slot = Number(await node(first.port).call('CLUSTER', 'KEYSLOT', key));
        const shards = (await node(first.port).call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
        const shard = shards.find(([from, to]) => slot >= from && slot <= to);
        if (!shard) throw new Error(`no master serves slot ${slot}`);
        return Number(shard[2][1]);
      },
      masters: masterPorts,
      async waitHealthy(ms = 15_000, expected = masters, gone = []) {
        const until = Date.now() + ms;
        let last = '';
        for (;;) {
          try {
            const up = await alive();
            const states = await Promise.all(up.map(async (s) => String(await node(s.port).call('CLUSTER', 'INFO'))));
            const ok = states.every((t) => t.includes('cluster_state:ok'));
            const ports = await masterPorts();
            const count = ports.length;
            if (ok && count === expected && !ports.some((p) => gone.includes(p))) return;
            last = `${states.filter((t) => t.includes('cluster_state:ok')).length}/${states.length} ok, ${count} masters`;
          } catch (err) {
            last = (err as Error).message;
          }
          if (Date.now() > until) throw new Error(`cluster not healthy within ${ms} ms: ${last}`);
          await sleep(100);
        }
      },
      stop,
    };
    await cluster.waitHealthy();
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Fails the master on `masterPort` over to one of its replicas with `CLUSTER FAILOVER` (the
 * coordinated manual failover: the master stops taking writes until the replica has caught
 * up, then the replica takes over). Resolves once the replica is master.
 */
export async function manualFailover(cluster: TestCluster, masterPort: number, ms = 10_000): Promise<number> {
  const view = parseNodes(String(await cluster.node(masterPort).call('CLUSTER', 'NODES')));
  const me = view.find((n) => n.flags.includes('myself'));
  const replica = view.find((n) => n.masterId === me?.id && !n.flags.includes('fail'));
  if (!replica) throw new Error(`master on ${masterPort} has no replica`);
  await cluster.node(replica.port).call('CLUSTER', 'FAILOVER');
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const role = (await cluster.node(replica.port).call('ROLE')) as unknown[];
    if (role[0] === 'master') return replica.port;
    await sleep(50);
  }
  throw new Error(`replica on ${replica.port} did not take over within ${ms} ms`);
}

/**
 * Writes the jobs module of the scale-out tests into `dir` and returns its path. Installation
 * jobs `tick-a` ... `tick-d` (every second, each run $JOB_BODY_MS long, default 50 ms; their
 * keys hash to different slots) append
 * `start` / `end` / `abort` lines to $RUN_LOG as `helpers/runs.ts` reads them, with the
 * fencing token; the instance job `manual` runs only when asked, and appends a `manual` line.
 */
export function writeScaleoutJobs(dir: string): string {
  const path = `${dir}/scaleout-jobs.mjs`;
  const source = `import { appendFileSync } from 'node:fs';
const log = process.env.RUN_LOG;
const inst = process.env.LEASEHOLD_INSTANCE_ID;
const bodyMs = Number(process.env.JOB_BODY_MS ?? 50);
const write = (ev, ctx, extra = {}) =>
  appendFileSync(log, JSON.stringify({ ev, job: ctx.jobId, tick: ctx.scheduledAt.getTime(), inst, token: ctx.fencingToken, t: Date.now(), ...extra }) + '\\n');
const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); });
});
const tick = (id) => ({
  id, scope: 'installation', cron: '* * * * * *', lease: '3s',
  async run(ctx) {
    write('start', ctx);
    try { await sleep(bodyMs, ctx.signal); write('end', ctx); } catch (err) { write('abort', ctx, { reason: err?.code ?? String(err) }); throw err; }
  },
});
export default [
  tick('tick-a'), tick('tick-b'), tick('tick-c'), tick('tick-d'),
  { id: 'manual', fixedRate: '1h', initialDelay: '1h', run: (ctx) => write('manual', ctx) },
];
`;
  writeFileSync(path, source);
  return path;
}

/** The installation jobs of {@link writeScaleoutJobs}. */
export const TICK_JOBS = ['tick-a', 'tick-b', 'tick-c', 'tick-d'] as const;

/** Nodes started by {@link startNodes}. */
export interface ScaleoutNodes {
  readonly procs: NodeProc[];
  /** Each node's HTTP port, in order. */
  readonly ports: number[];
  /**
   * SIGTERM to every node still running; resolves when all have exited on their own. A node
   * still running 15 s later is killed, and the call rejects (something kept it alive).
   */
  stop(): Promise<void>;
}

/** Starts `n` real nodes (`leasehold start`) with the jobs module and `env`, and waits until they serve HTTP. */
export async function startNodes(n: number, jobs: string, env: Record<string, string>): Promise<ScaleoutNodes> {
  const procs: NodeProc[] = [];
  for (let i = 0; i < n; i++) {
    procs.push(spawnLeasehold(['start', '--jobs', jobs, '--port', '0', '--host', '127.0.0.1'], { LEASEHOLD_INSTANCE_ID: `n${i}`, LEASEHOLD_SHUTDOWN_GRACE: '1s', LOG_LEVEL: 'info', ...env }));
  }
  const stop = async (): Promise<void> => {
    const running = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    for (const p of running) p.kill('SIGTERM');
    const stuck: string[] = [];
    await Promise.all(
      running.map(async (p, i) => {
        const timer = setTimeout(() => {
          stuck.push(`n${i}`);
          p.kill('SIGKILL');
        }, 15_000);
        await p.exited;
        clearTimeout(timer);
      }),
    );
    if (stuck.length > 0) throw new Error(`node(s) ${stuck.join(', ')} did not exit within 15 s of SIGTERM`);
  };
  try {
    const lines = await Promise.all(procs.map((p) => p.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 20_000)));
    return { procs, ports: lines.map((l) => Number(l['port'])), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
