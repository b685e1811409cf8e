/**
 * Spawns real `leasehold` processes (the built CLI) and reads their JSON log lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The built CLI entry. */
export const BIN = fileURLToPath(new URL('../../bin/leasehold.js', import.meta.url));

/** A running node process with its parsed log. */
export interface NodeProc {
  readonly child: ChildProcess;
  readonly lines: Array<Record<string, unknown>>;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal) when the process ends. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until a log line matches, or rejects after `ms`. */
  waitFor(pred: (l: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  kill(signal?: NodeJS.Signals): void;
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
// A node a failed test left running would hold the test file open (its pipes), so the process
// never exits: once the file's tests are done, whatever still runs is killed.
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** Runs `leasehold <args>` with extra environment; stdout is parsed as pino JSON lines. */
export function spawnLeasehold(args: string[], env: Record<string, string | undefined> = {}, extra: { preload?: Record<string, string>; group?: boolean } = {}): NodeProc {
  return spawnNode([BIN, ...args], { LOG_LEVEL: 'debug', ...extra.preload, ...env }, ROOT, extra.group);
}

/**
 * Runs `node <argv>` in `cwd` with extra environment; stdout is parsed as JSON lines. With
 * `group`, the node leads a process group of its own, as a command typed in a terminal does
 * (Ctrl-C there is SIGINT to the whole group: `process.kill(-child.pid, 'SIGINT')`).
 */
export function spawnNode(argv: string[], env: Record<string, string | undefined> = {}, cwd = ROOT, group = false): NodeProc {
  const child = spawn(process.execPath, argv, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
  });
  children.add(child);
  let out = '';
  let err = '';
  let partial = '';
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const p of parts) {
      if (!p.trim()) continue;
      try {
        lines.push(JSON.parse(p) as Record<string, unknown>);
      } catch {
        lines.push({ raw: p });
      }
    }
    for (const w of waiters.splice(0)) w();
  });
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      setImmediate(() => {
        for (const w of waiters.splice(0)) w();
      });
      resolve({ code, signal });
    }),
  );
  const waitFor = (pred: (l: Record<string, unknown>) => boolean, ms = 10_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        // The test has failed: a process left running would keep the test file from ever ending.
        child.kill('SIGKILL');
        reject(new Error(`no matching log line within ${ms} ms; stderr: ${err.slice(-500)}; stdout tail: ${out.slice(-1500)}`));
      }, ms);
      const check = (): void => {
        const hit = lines.find(pred);
        if (hit) {
          clearTimeout(timer);
          resolve(hit);
        } else if (child.exitCode !== null) {
          clearTimeout(timer);
          reject(new Error(`process exited (${child.exitCode}) before a matching line; stderr: ${err.slice(-500)}`));
        } else {
          waiters.push(check);
        }
      };
      check();
    });
  return {
    child,
    lines,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor,
    kill: (signal = 'SIGTERM') => child.kill(signal),
  };
}

/** Runs `leasehold <args>` to completion. */
export async function runLeasehold(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnLeasehold(args, env);
  const closed = new Promise<void>((resolve) => p.child.once('close', () => resolve()));
  const { code } = await p.exited;
  // 'exit' may come before the last of its output is read: wait for its pipes to close (bounded).
  await Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, 2_000).unref())]);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}
