/**
 * `npm run bench`: leasehold, BullMQ job schedulers and croner+redlock side by side.
 *
 * Environment: `BENCH_QUICK=1` (short mode), `BENCH_SCENARIOS=S1,S3`,
 * `BENCH_SYSTEMS=leasehold,bullmq`, `BENCH_S5_NODES` (S5's sizes, default 3,9,27),
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

async function main(): Promise<void> {
  const settings = readSettings(process.env, fileURLToPath(new URL('./results/latest.json', import.meta.url)));
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
