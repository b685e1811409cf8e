/**
 * A private `redis-server` for trying leasehold without one: started from the PATH on a
 * free loopback port, without persistence, and stopped when the node exits, whatever way
 * it exits (a watchdog shell holds the server and kills it when the node's pipe closes), not
 * before: a signal to the node's process group (Ctrl-C) does not reach it.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { sleep, systemClock, waitAtMost } from '../clock.js';

/** A running private Redis. */
export interface PrivateRedis {
  readonly url: string;
  readonly port: number;
  /** Stops the server and waits for the watchdog to exit. */
  stop(): Promise<void>;
}

/** The one line shown when `redis-server` is not installed. */
const NO_REDIS_HINT =
  'redis-server is not on the PATH: install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis), set REDIS_URL to an existing Redis, or run the whole cluster with docker compose up';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Whether a Redis answers PING with PONG on the loopback port (within half a second). With
 * `password`, it authenticates first (a server started with `--requirepass`).
 */
export function ping(port: number, password?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ port, host: '127.0.0.1' });
    let reply = '';
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    const bulk = (s: string): string => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
    const auth = password === undefined ? '' : `*2\r\n${bulk('AUTH')}${bulk(password)}`;
    const lines = password === undefined ? 1 : 2;
    sock.setTimeout(500, () => done(false));
    sock.once('error', () => done(false));
    sock.once('connect', () => sock.write(`${auth}PING\r\n`));
    sock.on('data', (d: Buffer) => {
      reply += d.toString();
      const answers = reply.split('\r\n');
      if (answers.length > lines) done(answers[lines - 1]?.startsWith('+PONG') === true);
    });
  });
}

// The watchdog: runs redis-server in the background and kills it as soon as its stdin (a
// pipe from the node) reaches end of file, which happens when the node exits for any reason,
// kill -9 included.
const WATCHDOG = 'redis-server "$@" & rp=$!; trap "kill $rp 2>/dev/null" TERM INT HUP; cat >/dev/null; kill $rp 2>/dev/null; wait $rp';

/**
 * Starts a private redis-server.
 * @throws LeaseholdError `invalidConfig` with {@link NO_REDIS_HINT} when it cannot be started.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes', '--loglevel', 'warning'];
  // A process group of its own: Ctrl-C in a terminal signals the node's group, and the server
  // must outlive the node's shutdown, which releases leases and writes stats through it.
  const child: ChildProcess = spawn('sh', ['-c', WATCHDOG, 'leasehold-redis', ...args], { stdio: ['pipe', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = systemClock.monotonic() + 10_000;
  while (!(await ping(port))) {
    if (child.exitCode !== null || /not found|No such file/.test(stderr)) {
      throw new LeaseholdError(ErrorCodes.invalidConfig, /not found|No such file/.test(stderr) ? NO_REDIS_HINT : `the private redis-server did not start: ${stderr.trim().split('\n')[0] ?? ''}`);
    }
    if (systemClock.monotonic() > deadline) {
      child.stdin?.end();
      throw new LeaseholdError(ErrorCodes.invalidConfig, `the private redis-server did not answer on port ${port} within 10 s`);
    }
    await sleep(systemClock, 50);
  }
  // The pipe must not keep the node alive; its end is what stops the server.
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  child.unref();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      child.stdin?.end();
      // A referenced timer keeps the process alive until the server has gone (or 3 s).
      await waitAtMost(systemClock, exited, 3_000);
    },
  };
}
