/**
 * A private Redis Sentinel setup for a test file: a master, its replicas and three Sentinels
 * (`redis-server <conf> --sentinel`, which is what Debian's `redis-sentinel` runs), all on
 * free loopback ports, and the means to fail the master over.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort, startRedis, type TestRedis } from './redis.js';

/** The name the Sentinels watch the master under. */
export const MASTER_NAME = 'leasehold-test';

/** Options for {@link startSentinels}. */
export interface StartSentinelsOptions {
  /** `down-after-milliseconds`: how long the master may not answer before it counts as down. Default 1000. */
  downAfterMs?: number;
  /** Replicas of the master; default 2, so that a failover leaves the new master a replica. */
  replicas?: number;
}

/** A running setup. */
export interface TestSentinels {
  /** The data servers, the first master at the start; which one is master changes with failovers. */
  readonly servers: TestRedis[];
  /** `127.0.0.1:<port>` of each Sentinel, for REDIS_SENTINELS. */
  readonly sentinels: string[];
  /** The port of the master the Sentinels announce now. */
  masterPort(): Promise<number>;
  /** A plain connection to a data server (closed by {@link stop}). */
  node(port: number): Redis;
  /**
   * `SENTINEL FAILOVER`: the Sentinels promote the replica and announce it. Resolves then,
   * with the new master's port and the time (ms) from the request to the announcement.
   */
  failover(ms?: number): Promise<{ port: number; announcedMs: number }>;
  /**
   * Makes every data server but the master its replica now (an old master among them), and
   * waits until all are in sync, as every Sentinel sees. The Sentinels turn an old master
   * into a replica too, but only 8 to 18 s after a failover; until then the new master may
   * have fewer replicas than `min-replicas-to-write` asks for. With `sentinelsToo: false` it
   * does not wait for the Sentinels to see the replicas (which they need to promote one).
   */
  settle(ms?: number, opts?: { sentinelsToo?: boolean }): Promise<void>;
  /**
   * Kills the master (SIGKILL, as a crash) and resolves once the Sentinels announce another,
   * with its port and the time (ms) from the kill to the announcement.
   */
  killMaster(ms?: number): Promise<{ port: number; announcedMs: number }>;
  /** Kills a data server (SIGKILL); {@link settle} leaves it out until {@link startServer}. */
  stopServer(port: number): Promise<void>;
  /** Starts a killed data server again, empty; {@link settle} makes it a replica. */
  startServer(port: number): Promise<void>;
  /** Kills every process and removes their files. */
  stop(): Promise<void>;
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const giveUpAt = Date.now() + ms;
  let last = '';
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = `: ${(err as Error).message}`;
    }
    if (Date.now() > giveUpAt) throw new Error(`${what} within ${ms} ms${last}`);
    await sleep(50);
  }
}

/** Starts a master, its replicas and three Sentinels, and waits until the Sentinels know each other and the replicas. */
export async function startSentinels(opts: StartSentinelsOptions = {}): Promise<TestSentinels> {
  const downAfterMs = opts.downAfterMs ?? 1_000;
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-sentinel-'));
  const servers: TestRedis[] = [];
  const procs: ChildProcess[] = [];
  const clients: Redis[] = [];
  const sentinels: string[] = [];
  const stop = async (): Promise<void> => {
    for (const c of clients.splice(0)) c.disconnect();
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : undefined)));
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  const byPort = new Map<number, Redis>();
  const connect = (port: number): Redis => {
    let c = byPort.get(port);
    if (!c) {
      c = new Redis(port, '127.0.0.1', { lazyConnect: false, maxRetriesPerRequest: 1 });
      c.on('error', () => undefined);
      clients.push(c);
      byPort.set(port, c);
    }
    return c;
  };
  try {
    const master = await startRedis();
    servers.push(master);
    const replicas = opts.replicas ?? 2;
    for (let i = 0; i < replicas; i++) servers.push(await startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] }));
    for (const replica of servers.slice(1)) {
      await until('the replica is in sync', 10_000, async () => (String(await connect(replica.port).info('replication')).includes('master_link_status:up') ? true : undefined));
    }
    const sentinelClients: Redis[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} ${downAfterMs}`,
          `sentinel failover-timeout ${MASTER_NAME} 5000`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      const args = [conf, '--sentinel', '--loglevel', 'warning'];
      const [cmd, argv] = SETPRIV !== undefined ? [SETPRIV, ['--pdeathsig', 'KILL', 'redis-server', ...args]] : ['redis-server', args];
      procs.push(spawn(cmd, argv, { stdio: 'ignore' }));
      sentinels.push(`127.0.0.1:${port}`);
      sentinelClients.push(connect(port));
    }
    // Sentinels find each other and the replica through hello messages, every 2 s.
    await until('the Sentinels know each other and the replica', 20_000, async () => {
      for (const s of sentinelClients) {
        const others = (await s.call('SENTINEL', 'SENTINELS', MASTER_NAME)) as unknown[];
        const known = (await s.call('SENTINEL', 'REPLICAS', MASTER_NAME)) as unknown[];
        if (others.length < 2 || known.length < servers.length - 1) return undefined;
      }
      return true;
    });
    const down = new Set<number>();
    const server = (port: number): TestRedis => {
      const found = servers.find((srv) => srv.port === port);
      if (!found) throw new Error(`no data server on ${port}`);
      return found;
    };
    const announcedOtherThan = async (before: number): Promise<number | undefined> => {
      const ports = await Promise.all(sentinelClients.map(async (s) => Number(((await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)) as [string, string])[1])));
      return ports.every((p) => p !== before && p === ports[0]) ? ports[0] : undefined;
    };
    const stopServer = async (port: number): Promise<void> => {
      down.add(port);
      byPort.get(port)?.disconnect();
      byPort.delete(port);
      await server(port).kill();
    };
    const masterPort = async (): Promise<number> => {
      const addr = (await (sentinelClients[0] as Redis).call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)) as [string, string];
      return Number(addr[1]);
    };
    return {
      servers,
      sentinels,
      masterPort,
      node: connect,
      async failover(ms = 30_000) {
        const before = await masterPort();
        const asked = Date.now();
        // A Sentinel refuses while an earlier failover is being finished (INPROG), and gives up on
        // one when it finds no replica fit to promote yet: ask again until it happens.
        const port = await until('the Sentinels announce another master', ms, async () => {
          await (sentinelClients[0] as Redis).call('SENTINEL', 'FAILOVER', MASTER_NAME).catch(() => undefined);
          const waitUntil = Date.now() + 3_000;
          while (Date.now() < waitUntil) {
            const p = await announcedOtherThan(before);
            if (p !== undefined) return p;
            await sleep(50);
          }
          return undefined;
        });
        return { port, announcedMs: Date.now() - asked };
      },
      async settle(ms = 30_000, { sentinelsToo = true } = {}) {
        const master = await masterPort();
        const others = servers.filter((srv) => srv.port !== master && !down.has(srv.port)).map((srv) => srv.port);
        for (const port of others) {
          const info = String(await connect(port).info('replication'));
          if (!info.includes(`master_port:${master}`)) await connect(port).call('REPLICAOF', '127.0.0.1', String(master));
        }
        // In sync, and seen so by every Sentinel (they read a replica's INFO every 10 s): only
        // then can one be promoted.
        await until('every replica replicates from the master, as every Sentinel sees', ms, async () => {
          for (const port of others) {
            const info = String(await connect(port).info('replication'));
            if (!(info.includes(`master_port:${master}`) && info.includes('master_link_status:up'))) return undefined;
          }
          if (!sentinelsToo) return true;
          for (const s of sentinelClients) {
            const replicas = ((await s.call('SENTINEL', 'REPLICAS', MASTER_NAME)) as string[][]).map((r) => {
              const o: Record<string, string> = {};
              for (let i = 0; i + 1 < r.length; i += 2) o[r[i] as string] = r[i + 1] as string;
              return o;
            });
            for (const port of others) {
              const me = replicas.find((r) => r['port'] === String(port));
              if (!me || me['role-reported'] !== 'slave' || me['master-link-status'] !== 'ok' || me['master-port'] !== String(master) || (me['flags'] ?? '').includes('down')) return undefined;
            }
          }
          return true;
        });
      },
      async killMaster(ms = 30_000) {
        const before = await masterPort();
        const killedAt = Date.now();
        await stopServer(before);
        const port = await until('the Sentinels announce another master', ms, () => announcedOtherThan(before));
        return { port, announcedMs: Date.now() - killedAt };
      },
      stopServer,
      async startServer(port) {
        await server(port).restart();
        down.delete(port);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
