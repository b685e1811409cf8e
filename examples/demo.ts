/**
 * `npm run demo`: three nodes and a private Redis on this machine. Once a second it prints
 * which node ran which installation tick, so "once per tick, whichever node" is visible.
 * Ctrl-C stops everything. DEMO_SECONDS=n stops by itself after n seconds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startPrivateRedis } from '../src/cli/private-redis.js';

const bin = fileURLToPath(new URL('../bin/leasehold.js', import.meta.url));
const jobs = fileURLToPath(new URL('./jobs.ts', import.meta.url));
const redis = await startPrivateRedis();
console.log(`private redis-server on ${redis.url} (stops with the demo)`);

const seen: string[] = [];
const nodes: ChildProcess[] = [];
for (let i = 1; i <= 3; i++) {
  const name = `node-${i}`;
  const child = spawn(process.execPath, [bin, 'start', '--jobs', jobs], {
    env: { ...process.env, REDIS_URL: redis.url, LEASEHOLD_INSTANCE_ID: name, PORT: i === 1 ? (process.env['PORT'] ?? '3000') : '0', LOG_LEVEL: 'debug' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  nodes.push(child);
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if (entry['msg'] === 'run started' && typeof entry['scheduledAt'] === 'string' && entry['fencingToken'] !== undefined) {
      seen.push(`${String(entry['jobId'])}@${entry['scheduledAt'].slice(11, 19)} → ${name}`);
    } else if (typeof entry['port'] === 'number' && i === 1) {
      console.log(`status of the cluster: http://localhost:${entry['port']}/manage/jobs  (any node answers the same)`);
    }
  });
}

const ticker = setInterval(() => {
  if (seen.length === 0) return;
  console.log(`${new Date().toISOString().slice(11, 19)}  ${seen.splice(0).sort().join('   ')}`);
}, 1_000);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(ticker);
  await Promise.all(nodes.map((n) => new Promise((r) => (n.exitCode !== null ? r(null) : (n.once('exit', r), n.kill('SIGTERM'))))));
  await redis.stop();
  console.log('stopped: nodes and the private redis-server');
}
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
const seconds = Number(process.env['DEMO_SECONDS'] ?? 0);
if (seconds > 0) setTimeout(() => void stop(), seconds * 1_000);
