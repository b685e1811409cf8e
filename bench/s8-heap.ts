/**
 * Where a node of S8 allocates: three `leasehold start` nodes of S8's jobs module (100,000 jobs,
 * 1,000 every 10 s; `BENCH_S8_JOBS`, `BENCH_S8_FAST`) on one Redis, pages asked of them every
 * 50 ms, and V8's sampling heap profiler on the first node through its inspector (loopback), with
 * the objects that minor and major collections freed included: what the node allocates, not what
 * it keeps. Two profiles: its first `BENCH_S8_HEAP_START` s (default 30) from spawn, and the
 * `BENCH_S8_HEAP_STEADY` s after (default 65, a minute's refresh included). Prints each one's total
 * and its largest allocation sites (self, and inclusive for leasehold's functions), and the
 * node's RSS every 5 s; writes the profiles to `BENCH_S8_HEAP_DIR` (default bench/results),
 * which Chrome's DevTools open.
 *
 *   npm run build && npx tsx bench/s8-heap.ts                          (Node 22 or later)
 *   npm run build && node --experimental-websocket --import tsx bench/s8-heap.ts   (Node 20)
 * @module
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { systemClock, withDeadline } from '../src/clock.js';
import { freePort, startRedis } from '../test/helpers/redis.js';
import { ROOT } from './cluster.js';
import { keepPaging, spawnS8Node } from './s8.js';

interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly ProfileNode[];
}
interface HeapProfile {
  readonly head: ProfileNode;
}

const env = process.env;
const jobs = env['BENCH_S8_JOBS'] ?? '100000';
const fast = env['BENCH_S8_FAST'] ?? '1000';
const startS = Number(env['BENCH_S8_HEAP_START'] ?? 30);
const steadyS = Number(env['BENCH_S8_HEAP_STEADY'] ?? 65);
const outDir = env['BENCH_S8_HEAP_DIR'] ?? fileURLToPath(new URL('./results', import.meta.url));
/** One sample per this many bytes allocated, on average. */
const SAMPLING = { samplingInterval: 65_536, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true };

/** A site: function, file (from the repository root, or the package) and line. */
function siteOf(n: ProfileNode): string {
  const url = n.callFrame.url.replace(/^file:\/\//, '').replace(ROOT, '').replace(/^.*node_modules\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
}

/** Total, self by site, and inclusive by site (each site counted once per stack). */
function summarize(p: HeapProfile): { total: number; self: Map<string, number>; inclusive: Map<string, number> } {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  const walk = (n: ProfileNode, stack: ReadonlySet<string>): number => {
    const site = siteOf(n);
    total += n.selfSize;
    self.set(site, (self.get(site) ?? 0) + n.selfSize);
    const inner = stack.has(site) ? stack : new Set([...stack, site]);
    let sum = n.selfSize;
    for (const c of n.children) sum += walk(c, inner);
    if (!stack.has(site)) inclusive.set(site, (inclusive.get(site) ?? 0) + sum);
    return sum;
  };
  walk(p.head, new Set());
  return { total, self, inclusive };
}

function print(name: string, p: HeapProfile): void {
  const { total, self, inclusive } = summarize(p);
  const mb = (b: number): string => (b / 1e6).toFixed(1).padStart(8);
  const top = (m: Map<string, number>, n: number, keep: (site: string) => boolean = () => true): string[] =>
    [...m].filter(([s]) => keep(s)).sort((a, b) => b[1] - a[1]).slice(0, n).map(([s, b]) => `${mb(b)} MB  ${s}`);
  console.log(`\n${name}: ${(total / 1e6).toFixed(0)} MB allocated\n-- largest sites (self)`);
  console.log(top(self, 20).join('\n'));
  console.log('-- leasehold\'s functions (inclusive)');
  console.log(top(inclusive, 25, (s) => / (dist|src)\//.test(s)).join('\n'));
}

if (typeof WebSocket === 'undefined') {
  console.error('bench/s8-heap.ts talks to the node\'s inspector over a WebSocket: run it on Node 22 or later, or with node --experimental-websocket --import tsx');
  process.exit(1);
}
/** `promise`, or a rejection naming `what` once `ms` have passed without it settling. */
const within = <T>(ms: number, what: string, promise: Promise<T>): Promise<T> => withDeadline(systemClock, promise, ms, () => new Error(`waited ${ms / 1000} s for ${what}`));

const redis = await startRedis();
const inspectPort = await freePort();
const ports = await Promise.all([0, 1, 2].map(() => freePort()));
const nodes = ports.map((port, i) => spawnS8Node(redis.url, i, port, { jobs, fast, output: 'ignore', ...(i === 0 ? { flags: [`--inspect-brk=127.0.0.1:${inspectPort}`] } : {}) }));
let stopPaging = (): void => undefined;
try {
  let target: string | undefined;
  for (let i = 0; i < 50 && target === undefined; i++) {
    await sleep(100);
    target = await fetch(`http://127.0.0.1:${inspectPort}/json/list`).then(async (r) => ((await r.json()) as Array<{ webSocketDebuggerUrl: string }>)[0]?.webSocketDebuggerUrl, () => undefined);
  }
  if (target === undefined) throw new Error('the node\'s inspector did not answer');
  const ws = new WebSocket(target);
  await within(10_000, 'the inspector\'s WebSocket to open', new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve);
    ws.addEventListener('error', reject);
  }));
  let seq = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.addEventListener('message', (e: MessageEvent) => {
    const m = JSON.parse(String(e.data)) as { id?: number; result?: unknown };
    if (m.id !== undefined) waiting.get(m.id)?.(m.result);
  });
  // A profile of a large heap takes a while to write; an inspector that never answers fails the run.
  const send = (method: string, params: object = {}): Promise<unknown> =>
    within(120_000, `the inspector's answer to ${method}`, new Promise((resolve) => {
      const id = ++seq;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    }));
  await send('HeapProfiler.enable');
  await send('HeapProfiler.startSampling', SAMPLING);
  await send('Runtime.runIfWaitingForDebugger');
  const t0 = Date.now();
  const pid = nodes[0]?.pid;
  const rss: string[] = [];
  const timer = setInterval(() => {
    const kb = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    rss.push(`${Math.round((Date.now() - t0) / 1000)} s ${Math.round(Number(kb) / 1024)} MB`);
  }, 5_000);
  stopPaging = keepPaging(ports, Number(jobs));
  const take = async (name: string, untilS: number): Promise<void> => {
    await sleep(Math.max(0, untilS * 1_000 - (Date.now() - t0)));
    const { profile } = (await send('HeapProfiler.stopSampling')) as { profile: HeapProfile };
    await writeFile(join(outDir, `s8-heap-${name}.heapprofile`), JSON.stringify(profile));
    print(`${name} (to ${untilS} s)`, profile);
  };
  await take('start', startS);
  await send('HeapProfiler.startSampling', SAMPLING);
  await take('steady', startS + steadyS);
  clearInterval(timer);
  console.log(`\nRSS of the profiled node: ${rss.join(', ')}`);
  ws.close();
} finally {
  stopPaging();
  for (const n of nodes) n.kill('SIGKILL');
  await redis.stop();
}
