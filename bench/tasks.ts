/**
 * S7, the background tasks' scenario beside S6 (`bench/s6.ts`), both part of `npm run bench`:
 * a 200 ms CPU-bound job every second next to 20 instance jobs every second, for
 * `BENCH_S7_SECONDS` (default 20): the 20 jobs' start lateness with the heavy job on the event
 * loop and on a worker thread.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, defineJob } from '../dist/index.js';
import { formatS6, type S6Figures } from './s6.js';
import { silent } from './s6-sides.js';

const S7_SECONDS = Number(process.env['BENCH_S7_SECONDS'] ?? 20);
const MODULE = new URL('./workers/tasks-module.mjs', import.meta.url).href;

/** S7's figures: the 20 light jobs' lateness, ms. */
export interface S7Figures {
  readonly seconds: number;
  readonly onLoop: { readonly p50: number; readonly p99: number; readonly max: number; readonly starts: number };
  readonly onWorker: { readonly p50: number; readonly p99: number; readonly max: number; readonly starts: number };
}

function quantiles(xs: number[]): { p50: number; p99: number; max: number; starts: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * q) - 1))] ?? 0;
  return { p50: Math.round(at(0.5) * 10) / 10, p99: Math.round(at(0.99) * 10) / 10, max: Math.round((s.at(-1) ?? 0) * 10) / 10, starts: s.length };
}

async function s7Once(onWorker: boolean): Promise<{ p50: number; p99: number; max: number; starts: number }> {
  const mod = (await import(MODULE)) as { heavyOnWorker: Parameters<ReturnType<typeof createRunner>['add']>[0]; burn: (ms: number) => number };
  const runner = createRunner({ logger: silent });
  runner.add(onWorker ? mod.heavyOnWorker : defineJob({ id: 'heavy', fixedRate: '1s', run: () => void mod.burn(200) }));
  for (let i = 0; i < 20; i++) runner.add(defineJob({ id: `light-${i}`, fixedRate: '1s', initialDelay: `${(i * 37) % 1000}ms`, run: () => {} }));
  const lateness: number[] = [];
  runner.on('runStarted', (e) => {
    if (e.jobId !== 'heavy') lateness.push(e.lagMs);
  });
  await runner.start();
  await sleep(S7_SECONDS * 1000);
  await runner.stop();
  return quantiles(lateness);
}

/** Runs S7. */
export async function runS7(log: (line: string) => void): Promise<S7Figures> {
  log(`S7: heavy job on the event loop, ${S7_SECONDS} s`);
  const onLoop = await s7Once(false);
  log(`S7: heavy job on a worker thread, ${S7_SECONDS} s`);
  const onWorker = await s7Once(true);
  return { seconds: S7_SECONDS, onLoop, onWorker };
}

/** S6 and S7 as tables. */
export function formatTaskTables(s6: S6Figures | undefined, s7: S7Figures | undefined): string {
  const out: string[] = [];
  if (s6) out.push(formatS6(s6));
  if (s7) {
    out.push('', `S7: a 200 ms CPU-bound job every second beside 20 instance jobs every second, ${s7.seconds} s: the 20 jobs' start lateness, ms`, '', '| heavy job on | starts | p50 | p99 | max |', '|---|---|---|---|---|');
    out.push(`| the event loop | ${s7.onLoop.starts} | ${s7.onLoop.p50} | ${s7.onLoop.p99} | ${s7.onLoop.max} |`);
    out.push(`| a worker thread | ${s7.onWorker.starts} | ${s7.onWorker.p50} | ${s7.onWorker.p99} | ${s7.onWorker.max} |`);
  }
  return out.join('\n');
}
