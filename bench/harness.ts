/**
 * The benchmark: every selected scenario, every selected system in turn, each on a fresh
 * redis-server; the results as one JSON document.
 * @module
 */
import { mkdtemp, rm, mkdir, writeFile } from 'node:fs/promises';
import { cpus, freemem, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BODY_MS, FLOOR, type SystemName } from './protocol.js';
import { redisHz } from './redis.js';
import { SCALE_OUT_SYSTEMS, STATUS_SYSTEMS, scaleOutScenarios, statusScenario, timedScenario, type BenchSettings, type TimedScenario } from './scenarios.js';
import { runStatus, type StatusFigures } from './status.js';
import type { TargetCheck } from './targets.js';
import { runTimed, type TimedFigures } from './timed.js';

/** A system that could not be measured in a scenario. */
export interface Failed {
  readonly error: string;
}

/** One scenario's results. */
export interface ScenarioResult {
  readonly name: string;
  readonly description: string;
  readonly durationMs?: number;
  readonly jobs: number;
  readonly processes: number;
  readonly systems: Partial<Record<SystemName, TimedFigures | StatusFigures | Failed>>;
}

/** The document written to `bench/results/latest.json`. */
export interface BenchResults {
  readonly generatedAt: string;
  readonly quick: boolean;
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly memoryGb: number;
    readonly freeMemoryGb: number;
    readonly node: string;
    readonly platform: string;
    readonly redisHz: number;
  };
  readonly settings: { readonly bodyMs: number; readonly leaseMs: number };
  readonly scenarios: ScenarioResult[];
  readonly wallSeconds: number;
  /** The targets checked against these figures (added by `run.ts`). */
  readonly targets?: readonly TargetCheck[];
}

const gb = (b: number): number => Math.round((b / 2 ** 30) * 10) / 10;

/** Runs the benchmark; `log` receives progress lines. */
export async function runBench(settings: BenchSettings, log: (line: string) => void): Promise<BenchResults> {
  const t0 = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-bench-'));
  const scenarios: ScenarioResult[] = [];
  const stopping: Array<Promise<void>> = [];
  /**
   * One timed scenario (S1 to S3, a size of S5) for each of `systems` in turn. A system's
   * processes stop while the next one's start, unless `oneAtATime` (S5's tens of processes).
   */
  const timedRuns = async (s: TimedScenario, systems: readonly SystemName[], oneAtATime = false): Promise<ScenarioResult> => {
    const figures: ScenarioResult['systems'] = {};
    for (const system of systems) {
      log(`${s.name} ${system}: ${s.description}, ${s.durationMs / 1000} s`);
      try {
        const { figures: f, done } = await runTimed(s, system, settings.leaseMs, dir);
        const stopped = done.catch((err: unknown) => log(`  stopping ${system} failed: ${String(err)}`));
        if (oneAtATime) await stopped;
        else stopping.push(stopped);
        figures[system] = f;
      } catch (err) {
        log(`  failed: ${err instanceof Error ? err.message : String(err)}`);
        figures[system] = { error: err instanceof Error ? err.message.split('\n')[0] ?? '' : String(err) };
      }
    }
    return { name: s.name, description: s.description, durationMs: s.durationMs, jobs: s.jobs, processes: s.processes, systems: figures };
  };
  try {
    for (const name of settings.scenarios) {
      if (name === 'S4') {
        const s = statusScenario(settings);
        log(`S4: ${s.description}`);
        const compared = settings.systems.filter((sys) => STATUS_SYSTEMS.includes(sys));
        const systems = await runStatus(s, compared).catch((err: unknown): Partial<Record<SystemName, Failed>> => {
          log(`  failed: ${String(err)}`);
          return Object.fromEntries(compared.map((sys) => [sys, { error: String(err) }]));
        });
        scenarios.push({ name, description: s.description, jobs: s.jobs, processes: s.processes, systems });
      } else if (name === 'S5') {
        const systems = settings.systems.filter((sys) => SCALE_OUT_SYSTEMS.includes(sys));
        for (const s of scaleOutScenarios(settings)) scenarios.push(await timedRuns(s, systems, true));
      } else {
        // The floor, one process running every job uncoordinated, is measured where its lateness is a target's bound.
        scenarios.push(await timedRuns(timedScenario(name, settings), settings.systems.filter((sys) => sys !== FLOOR || name !== 'S2')));
      }
    }
  } finally {
    await Promise.all(stopping);
    if (process.env['BENCH_KEEP'] === '1') log(`runs kept in ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
  const cpu = cpus();
  return {
    generatedAt: new Date().toISOString(),
    quick: settings.quick,
    machine: {
      cpu: cpu[0]?.model ?? 'unknown',
      cores: cpu.length,
      memoryGb: gb(totalmem()),
      freeMemoryGb: gb(freemem()),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      redisHz: redisHz(),
    },
    settings: { bodyMs: BODY_MS, leaseMs: settings.leaseMs },
    scenarios,
    wallSeconds: Math.round((Date.now() - t0) / 100) / 10,
  };
}

/** Writes the results as JSON. */
export async function writeResults(file: string, results: BenchResults): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
}
