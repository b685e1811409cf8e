/**
 * A private `redis-server` per test file: started from PATH on a free loopback
 * port, never the shared one on 6379, and never left running after the test
 * process ends.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { ping } from '../../src/cli/private-redis.js';

/** Options for {@link startRedis}. */
export interface StartRedisOptions {
  /** Turn the append-only file on, so data survives {@link TestRedis.restart}. */
  appendonly?: boolean;
  /** Extra `redis-server` arguments, e.g. `['--maxmemory', '10mb']`. */
  args?: string[];
}

/** A running private `redis-server` and the means to disturb it. */
export interface TestRedis {
  /** The loopback port it listens on. */
  readonly port: number;
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** A new ioredis client for this server; closed by {@link TestRedis.stop}. */
  client(): Redis;
  /** Freeze the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): void;
  /** Thaw a paused server (SIGCONT). */
  resume(): void;
  /** Kill the server (SIGKILL) and wait until it has exited. */
  kill(): Promise<void>;
  /** Start the server again on the same port and directory (AOF data survives). */
  restart(): Promise<void>;
  /** Kill the server, close its clients and remove its directory. Always safe. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      if (child.pid !== undefined) {
        try {
          process.kill(child.pid, 'SIGCONT');
          process.kill(child.pid, 'SIGKILL');
        } catch (err) {
          // ESRCH: it is gone already, which is what this hook wants.
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
        }
      }
    }
  });
}

/** A TCP port on 127.0.0.1 that nothing listened on a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}


// With setpriv the server is killed by the kernel should this process die
// without running its exit hook (SIGKILL, a crash of the test runner).
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

function spawnServer(port: number, dir: string, opts: StartRedisOptions): ChildProcess {
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--save', '',
    '--appendonly', opts.appendonly === true ? 'yes' : 'no',
    '--dir', dir,
    '--daemonize', 'no',
    '--loglevel', 'warning',
    ...(opts.args ?? []),
  ];
  const [cmd, argv] = SETPRIV !== undefined
    ? [SETPRIV, ['--pdeathsig', 'KILL', 'redis-server', ...args]]
    : ['redis-server', args];
  const child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

async function waitUntilServing(child: ChildProcess, port: number, stderr: () => string, password: string | undefined): Promise<void> {
  const giveUpAt = Date.now() + 10_000;
  while (Date.now() < giveUpAt) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`redis-server on port ${port} exited (${child.exitCode ?? child.signalCode}): ${stderr()}`);
    }
    if (await ping(port, password)) return;
    await sleep(20);
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 10s: ${stderr()}`);
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Start a private `redis-server` on a free loopback port and wait until it
 * answers PING. Call {@link TestRedis.stop} when done (an `after` hook).
 */
export async function startRedis(opts: StartRedisOptions = {}): Promise<TestRedis> {
  installExitHook();
  // A server started with `--requirepass` is pinged, and its clients connect, with that password.
  const at = opts.args?.indexOf('--requirepass') ?? -1;
  const password = at >= 0 ? opts.args?.[at + 1] : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-redis-'));
  const clients: Redis[] = [];
  let child: ChildProcess | undefined;
  let port = 0;
  let paused = false;
  let stderr = '';

  const launch = async (): Promise<void> => {
    stderr = '';
    const proc = spawnServer(port, dir, opts);
    proc.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-2000);
    });
    child = proc;
    await waitUntilServing(proc, port, () => stderr, password);
  };

  // Another process may take the port between freePort() and the bind: retry.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (err) {
      if (child !== undefined) await killChild(child);
      if (attempt >= 3) {
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
    }
  }

  async function killChild(proc: ChildProcess): Promise<void> {
    if (proc.exitCode === null && proc.signalCode === null) {
      if (paused) proc.kill('SIGCONT');
      proc.kill('SIGKILL');
    }
    paused = false;
    await waitForExit(proc);
  }

  const url = password === undefined ? `redis://127.0.0.1:${port}` : `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  return {
    port,
    url,
    client() {
      const client = new Redis(port, '127.0.0.1', { lazyConnect: false, ...(password === undefined ? {} : { password }) });
      clients.push(client);
      return client;
    },
    pause() {
      child?.kill('SIGSTOP');
      paused = true;
    },
    resume() {
      child?.kill('SIGCONT');
      paused = false;
    },
    async kill() {
      if (child !== undefined) await killChild(child);
    },
    async restart() {
      if (child !== undefined) await killChild(child);
      await launch();
    },
    async stop() {
      if (child !== undefined) await killChild(child);
      for (const client of clients.splice(0)) client.disconnect();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The commands Redis executed since its last `CONFIG RESETSTAT`, by name, those inside Lua
 * scripts included, without the script calls themselves and the `CONFIG` of the reset.
 */
export async function commandsRun(redis: { info(section: 'commandstats'): Promise<string> }): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [, name, n] of (await redis.info('commandstats')).matchAll(/cmdstat_(\w+):calls=(\d+),/g)) {
    if (name !== undefined && name !== 'evalsha' && name !== 'eval' && name !== 'config') out[name] = Number(n);
  }
  return out;
}
