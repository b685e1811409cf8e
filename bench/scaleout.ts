/**
 * S5's figures side by side: for each system and size of the cluster, the Redis work per run
 * against that at the smallest size, and how evenly the runs fall over the nodes.
 * @module
 */
import type { ScenarioResult } from './harness.js';
import { SYSTEMS, type SystemName } from './protocol.js';
import type { TimedFigures } from './timed.js';

/** One system at one size of the cluster. */
export interface ScaleOutRow {
  readonly system: SystemName;
  readonly nodes: number;
  readonly runs: number;
  readonly duplicates: number;
  readonly misses: number;
  readonly redisCommandsPerRun: number;
  readonly redisCpuMsPerRun: number;
  /** Of the Redis CPU, executing commands (scripts included), ms. */
  readonly redisExecMsPerRun: number;
  /** The two above over those of the same system at the smallest size measured. */
  readonly commandsVsSmallest: number;
  readonly cpuVsSmallest: number;
  /** The fewest and most runs of one node, as a multiple of 1/N of the runs. */
  readonly shareMin: number;
  readonly shareMax: number;
  /** Worker CPU per run, every node's together, ms. */
  readonly cpuMsPerRun: number;
  readonly latenessP99Ms: number;
}

/** Whether a scenario result is a size of S5. */
export function isScaleOut(s: ScenarioResult): boolean {
  return s.name.startsWith('S5 ');
}

const r2 = (v: number): number => Math.round(v * 100) / 100;

/** The rows of every S5 size in `scenarios`, by system, smallest size first. */
export function scaleOutRows(scenarios: readonly ScenarioResult[]): ScaleOutRow[] {
  const sizes = scenarios.filter(isScaleOut).sort((a, b) => a.processes - b.processes);
  const rows: ScaleOutRow[] = [];
  for (const system of SYSTEMS) {
    let smallest: TimedFigures | undefined;
    for (const s of sizes) {
      const f = s.systems[system];
      if (f === undefined || !('runs' in f)) continue;
      smallest ??= f;
      const fair = f.runs / s.processes;
      // A node with no run in the window is not among `workers` only if it died; here none does.
      const shares = f.workers.map((w) => (fair === 0 ? 0 : w.runs / fair));
      rows.push({
        system,
        nodes: s.processes,
        runs: f.runs,
        duplicates: f.duplicates,
        misses: f.misses,
        redisCommandsPerRun: f.redisCommandsPerRun,
        redisCpuMsPerRun: f.redisCpuMsPerRun,
        redisExecMsPerRun: f.redisExecMsPerRun,
        commandsVsSmallest: smallest.redisCommandsPerRun === 0 ? 0 : r2(f.redisCommandsPerRun / smallest.redisCommandsPerRun),
        cpuVsSmallest: smallest.redisCpuMsPerRun === 0 ? 0 : r2(f.redisCpuMsPerRun / smallest.redisCpuMsPerRun),
        shareMin: r2(Math.min(...shares)),
        shareMax: r2(Math.max(...shares)),
        cpuMsPerRun: f.cpuMsPerRun,
        latenessP99Ms: f.latenessMs.p99,
      });
    }
  }
  return rows;
}
