/**
 * The median of several runs: `tsx bench/medians.ts <result.json>...` reads result files of
 * `npm run bench` (the scenarios' `BENCH_OUT` and the tasks' `BENCH_TASKS_OUT`) and prints, per
 * scenario and system, each figure's median with the runs' own values after it, the form the
 * tables of docs/benchmarks.md take. Each size of S5 is a scenario of its own (`S5 N=27`); its
 * nodes' shares are in each run's own table, not here.
 * @module
 */
import { readFileSync } from 'node:fs';
import type { BenchResults } from './harness.js';
import { median, r2, type S6Figures } from './s6.js';
import type { StatusFigures } from './status.js';
import { columns } from './table.js';
import type { TimedFigures } from './timed.js';

/** The figures of one system in one scenario that the tables compare. */
const FIGURES = [
  ['dup', (f) => f.duplicates],
  ['miss', (f) => f.misses],
  ['late p50', (f) => f.latenessMs?.p50],
  ['p99', (f) => f.latenessMs?.p99],
  ['p99 30 s on', (f) => f.steadyLatenessMs?.p99],
  ['redis cmd/run', (f) => f.redisCommandsPerRun],
  ['redis cpu ms/run', (f) => f.redisCpuMsPerRun],
  ['cpu ms/run', (f) => f.cpuMsPerRun],
  ['rss MB', (f) => f.rssMb ?? f.holdRssMb ?? undefined],
  ['GET p50', (f) => f.manageJobs?.p50],
  ['GET p99', (f) => f.manageJobs?.p99],
] as const satisfies ReadonlyArray<readonly [string, (f: Figures) => number | undefined]>;

/** A timed scenario's figures (S1 to S3, S5) or S4's, whichever the system has. */
type Figures = Partial<TimedFigures> & Partial<StatusFigures>;

/** `median (run 1, run 2, ...)`, or `-` when no run has the figure. */
function cell(values: ReadonlyArray<number | undefined>): string {
  const known = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (known.length === 0) return '-';
  return `${r2(median(known))} (${known.map(r2).join(', ')})`;
}

function scenarioTable(files: readonly BenchResults[]): string {
  const rows: string[][] = [];
  const keys = new Map<string, Figures[]>();
  for (const results of files) {
    for (const scenario of results.scenarios) {
      for (const [system, figures] of Object.entries(scenario.systems)) {
        if (!figures || 'error' in figures) continue;
        const key = `${scenario.name}\t${system}`;
        keys.set(key, [...(keys.get(key) ?? []), figures as Figures]);
      }
    }
  }
  for (const [key, runs] of keys) {
    const [scenario = '', system = ''] = key.split('\t');
    rows.push([scenario, system, String(runs.length), ...FIGURES.map(([, read]) => cell(runs.map(read)))]);
  }
  return columns(['scenario', 'system', 'runs', ...FIGURES.map(([name]) => name)], rows);
}

function tasksTable(files: readonly S6Figures[]): string {
  const rows: string[][] = [];
  const first = files[0];
  if (!first) return '';
  first.comparisons.forEach((comparison, i) => {
    const same = files.map((f) => f.comparisons[i]).filter((c) => c?.kind === comparison.kind && c.task === comparison.task);
    const leasehold = same.map((c) => c?.sides['leasehold']?.tasksPerSecond);
    for (const check of comparison.checks) {
      const peer = same.map((c) => c?.sides[check.peer]?.tasksPerSecond);
      const ratio = same.map((c) => c?.checks.find((k) => k.peer === check.peer)?.ratio);
      const commands = same.map((c) => c?.checks.find((k) => k.peer === check.peer)?.commands?.ratio);
      rows.push([comparison.kind, comparison.task, check.peer, cell(leasehold), cell(peer), cell(ratio), cell(commands), check.target === null ? 'reference' : `>= ${check.target}`]);
    }
  });
  return columns(['kind', 'task', 'against', 'leasehold tasks/s', 'its tasks/s', 'ratio', 'commands ratio', 'target'], rows);
}

const files = process.argv.slice(2).map((file) => JSON.parse(readFileSync(file, 'utf8')) as Partial<BenchResults> & { s6?: S6Figures });
const scenarios = files.filter((f): f is BenchResults => Array.isArray(f.scenarios));
const tasks = files.map((f) => f.s6).filter((s): s is S6Figures => s !== undefined);
if (scenarios.length > 0) process.stdout.write(`${scenarioTable(scenarios)}\n`);
if (tasks.length > 0) process.stdout.write(`\n${tasksTable(tasks)}\n`);
if (scenarios.length === 0 && tasks.length === 0) process.stderr.write('usage: tsx bench/medians.ts <bench result json>...\n');
