/**
 * `npm run bench`: leasehold, BullMQ job schedulers, croner+redlock and node-cron side by side.
 *
 * Environment: `BENCH_QUICK=1` (short mode), `BENCH_SCENARIOS=S1,S3` (S6 and S7, the
 * background tasks' scenarios, run after the others: `BENCH_S6_TASKS` (default 10,000),
 * `BENCH_S6_CPU_TASKS` (the 1 ms tasks, default 2,000), `BENCH_S6_ROUNDS` (default 5, quick 3),
 * `BENCH_S6_KINDS=loop,worker`, `BENCH_S7_SECONDS`, `BENCH_TASKS_OUT`, default
 * bench/results/tasks.json, with BENCH_QUICK bench/results/tasks.quick.json),
 * S8 (a large installation, bench/s8.ts) runs last: 100,000 jobs on 3 nodes, 20,000 with
 * BENCH_QUICK (`BENCH_S8_JOBS`, `BENCH_S8_NODES`, `BENCH_S8_SECONDS`, `BENCH_S8_OUT`, default
 * bench/results/s8.json, quick bench/results/s8.quick.json). `BENCH_SYSTEMS=leasehold,node-cron`, `BENCH_S5_NODES` (S5's sizes, default 3,9,27),
 * `BENCH_LEASE_MS` (default 5000), `BENCH_REDIS_HZ`
 * (default 10), `BENCH_OUT` (default bench/results/latest.json; with BENCH_QUICK,
 * bench/results/latest.quick.json, so a quick run never overwrites the full-run results),
 * `BENCH_NODE_FLAGS_LEASEHOLD="--cpu-prof --cpu-prof-dir=prof"` (and `_BULLMQ`,
 * `_CRONER_REDLOCK`). leasehold runs from `dist/`: `npm run build` first.
 * @module
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ROOT } from './cluster.js';
import { runBench, writeResults } from './harness.js';
import { readSettings } from './scenarios.js';
import { formatTable } from './table.js';
import { checkTargets, formatTargets } from './targets.js';
import { readS6Options, runS6 } from './s6.js';
import { formatTaskTables, runS7 } from './tasks.js';
import { writeFile } from 'node:fs/promises';
import { formatS8, runS8 } from './s8.js';

/** S6 and S7 (background tasks) run on their own, after the others: `BENCH_SCENARIOS` names them too. */
const TASK_SCENARIOS = ['S6', 'S7'];
/** S8 runs on its own, last. */
const OWN_SCENARIOS = [...TASK_SCENARIOS, 'S8'];

/** S8, a large installation: shorter with BENCH_QUICK. */
async function largeBench(env: NodeJS.ProcessEnv): Promise<void> {
  const quick = env['BENCH_QUICK'] === '1' || env['BENCH_QUICK'] === 'true';
  const out = env['BENCH_S8_OUT'] ?? fileURLToPath(new URL(quick ? './results/s8.quick.json' : './results/s8.json', import.meta.url));
  const figures = await runS8({ ...(quick ? { BENCH_S8_JOBS: '20000', BENCH_S8_SECONDS: '30' } : {}), ...env }, (line) => void process.stderr.write(`${line}\n`));
  await writeFile(out, `${JSON.stringify(figures, null, 2)}\n`);
  process.stdout.write(`\n${formatS8(figures)}\n\nwritten to ${out}\n`);
}

async function tasksBench(env: NodeJS.ProcessEnv): Promise<void> {
  const wanted = env['BENCH_SCENARIOS']?.split(',').map((s) => s.trim()) ?? TASK_SCENARIOS;
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const s6 = wanted.includes('S6') ? await runS6(readS6Options(env), log) : undefined;
  const s7 = wanted.includes('S7') ? await runS7(log) : undefined;
  if (!s6 && !s7) return;
  const quick = env['BENCH_QUICK'] === '1' || env['BENCH_QUICK'] === 'true';
  const out = env['BENCH_TASKS_OUT'] ?? fileURLToPath(new URL(quick ? './results/tasks.quick.json' : './results/tasks.json', import.meta.url));
  await writeFile(out, `${JSON.stringify({ s6, s7 }, null, 2)}\n`);
  process.stdout.write(`\n${formatTaskTables(s6, s7)}\n\nwritten to ${out}\n`);
}

async function main(): Promise<void> {
  const scenarios = process.env['BENCH_SCENARIOS']?.split(',').map((x) => x.trim());
  const others = scenarios?.filter((x) => !OWN_SCENARIOS.includes(x));
  if (others === undefined || others.length > 0) await mainScenarios({ ...process.env, ...(others ? { BENCH_SCENARIOS: others.join(',') } : {}) });
  await tasksBench(process.env);
  if (scenarios === undefined || scenarios.includes('S8')) await largeBench(process.env);
}

async function mainScenarios(env: NodeJS.ProcessEnv): Promise<void> {
  const settings = readSettings(env, fileURLToPath(new URL('./results/latest.json', import.meta.url)));
  if (settings.systems.includes('leasehold') && !existsSync(`${ROOT}dist/index.js`)) {
    throw new Error('dist/index.js is missing: run `npm run build` first');
  }
  const measured = await runBench(settings, (line) => process.stderr.write(`${line}\n`));
  const results = { ...measured, targets: checkTargets(measured) };
  await writeResults(settings.outFile, results);
  const targets = results.targets.length > 0 ? `\n\ntargets (one run; the issue quotes medians of repeated runs):\n${formatTargets(results.targets)}` : '';
  process.stdout.write(`${formatTable(results)}${targets}\n\nwritten to ${settings.outFile} (${results.wallSeconds} s)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
