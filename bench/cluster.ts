/**
 * Worker processes of one system: spawned as real Node processes (`node --import tsx`, so
 * the pid is the worker itself and kill -9 hits it), asked for snapshots over IPC, stopped
 * or killed.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isFromWorker, type FromWorker, type Snapshot, type SystemName, type WorkerConfig } from './protocol.js';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** A running worker. */
export interface WorkerProc {
  readonly index: number;
  readonly pid: number;
  /** Resolves once the worker has set up its schedule. */
  readonly ready: Promise<void>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
  /** The worker's counters now. */
  snapshot(): Promise<Snapshot>;
  /** Asks the worker to stop; kills it if it has not exited within `graceMs`. */
  stop(graceMs: number): Promise<void>;
  /** kill -9. */
  kill(): void;
  /** The end of its stderr, for error messages. */
  stderr(): string;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Extra `node` flags per system (e.g. `--cpu-prof`), from `BENCH_NODE_FLAGS_<SYSTEM>`. */
function nodeFlags(system: SystemName): string[] {
  const name = `BENCH_NODE_FLAGS_${system.toUpperCase().replace(/[^A-Z]/g, '_')}`;
  return (process.env[name] ?? '').split(' ').filter((f) => f !== '');
}

/** Spawns one worker of `config.system`. */
export function spawnWorker(config: WorkerConfig): WorkerProc {
  const script = fileURLToPath(new URL(`./workers/${config.system}.ts`, import.meta.url));
  const child = spawn(process.execPath, [...nodeFlags(config.system), '--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, BENCH_WORKER: JSON.stringify(config) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  if (child.pid === undefined) throw new Error(`could not spawn the ${config.system} worker`);
  live.add(child);
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => {
    live.delete(child);
    resolve();
  }));
  const ready = new Promise<void>((resolve, reject) => {
    const onMessage = (m: unknown): void => {
      if (!isFromWorker(m)) return;
      if (m.type === 'ready') resolve();
      if (m.type === 'failed') reject(new Error(`${config.system} worker ${config.index} failed: ${m.message}`));
    };
    child.on('message', onMessage);
    void exited.then(() => reject(new Error(`${config.system} worker ${config.index} exited before it was ready: ${err}`)));
  });
  ready.catch(() => undefined); // observed by the caller; no unhandled rejection meanwhile
  let seq = 0;
  const pending = new Map<number, (s: Snapshot) => void>();
  child.on('message', (m: unknown) => {
    if (!isFromWorker(m) || m.type !== 'snapshot') return;
    const reply = m as Extract<FromWorker, { type: 'snapshot' }>;
    pending.get(reply.seq)?.(reply.snapshot);
    pending.delete(reply.seq);
  });
  return {
    index: config.index,
    pid: child.pid,
    ready,
    exited,
    snapshot() {
      const id = ++seq;
      return new Promise<Snapshot>((resolve, reject) => {
        pending.set(id, resolve);
        child.send({ type: 'snapshot', seq: id }, (e) => {
          if (e) reject(e);
        });
        void exited.then(() => reject(new Error(`${config.system} worker ${config.index} exited: ${err}`)));
      });
    },
    async stop(graceMs) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (child.connected) child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
    kill() {
      child.kill('SIGKILL');
    },
    stderr: () => err,
  };
}
