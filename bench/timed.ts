/**
 * One system through one of S1 to S3: a fresh redis-server, the processes, counters read
 * at the edges of the measured window, an optional kill -9, and the figures.
 * @module
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { analyzeRuns, readRuns, type CrashFigures, type RunRecord, type Spread, type TickLateness } from './analyze.js';
import { spawnWorker, type WorkerProc } from './cluster.js';
import { FLOOR, type Snapshot, type SystemName } from './protocol.js';
import { startBenchRedis, type ServerCounters } from './redis.js';
import type { TimedScenario } from './scenarios.js';

/** Figures of one system in one timed scenario. */
export interface TimedFigures {
  /** Runs that started inside the measured window. */
  readonly runs: number;
  readonly duplicates: number;
  readonly extraRuns: number;
  readonly misses: number;
  readonly expectedTicks: number;
  readonly latenessMs: Spread;
  /** Lateness of the ticks due 30 s or more into the window, the steady state (see `STEADY_AFTER_MS`); absent in results of before 6 December. */
  readonly steadyLatenessMs?: Spread;
  /** Lateness tick by tick (see `TickFigures.byTick`); absent in results of before the evening of 6 December. */
  readonly byTick?: readonly TickLateness[];
  readonly redisCommandsPerRun: number;
  readonly redisRoundTripsPerRun: number;
  readonly redisBatchesPerRun: number;
  readonly redisCpuMsPerRun: number;
  /** Of `redisCpuMsPerRun`, the time Redis spent executing commands (scripts included). */
  readonly redisExecMsPerRun: number;
  readonly cpuMsPerRun: number;
  /** Largest RSS of one process at the end of the window. */
  readonly rssMb: number;
  readonly windowMs: number;
  /** Commands Redis executed per run, by name (scripts' inner calls included), largest first. */
  readonly redisCommandsByName: Readonly<Record<string, number>>;
  /** Commands the clients sent per run, by name, largest first. */
  readonly sentByName: Readonly<Record<string, number>>;
  /** System-specific counters per run (claims lost, locks refused, ...). */
  readonly perRun: Readonly<Record<string, number>>;
  readonly crash?: CrashFigures & { readonly atMs: number; readonly leaseMs: number };
  /** Largest gap between a worker's recording clock and Date.now(), ms. */
  readonly clockDriftMs: number;
  /**
   * Each process in the window: the runs it started and the CPU it used, ms. Where the CPU
   * goes: a process that wins a tick runs its bodies, one that loses only fires and claims.
   */
  readonly workers: ReadonlyArray<{ readonly index: number; readonly runs: number; readonly cpuMs: number }>;
}

interface Edge {
  readonly at: number;
  readonly redis: ServerCounters;
  readonly workers: Map<number, Snapshot>;
}

/** Round to 2 decimals. */
const r2 = (v: number): number => Math.round(v * 100) / 100;

async function sleepUntil(t: number): Promise<void> {
  const ms = t - Date.now();
  if (ms > 0) await sleep(ms);
}

/** The index of the first of `files` to grow (a run started); 0 if none does within `ms`. */
async function firstToRun(files: readonly string[], ms: number): Promise<number> {
  const size = (f: string): number => (existsSync(f) ? statSync(f).size : 0);
  const before = files.map(size);
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const grown = files.findIndex((f, i) => size(f) > (before[i] ?? 0));
    if (grown >= 0) return grown;
    await sleep(1);
  }
  return 0;
}

/** `after - before` per name. */
function delta(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
}

/** Per-run values by name, largest first, zeros left out. */
function perName(counts: Readonly<Record<string, number>>, per: (v: number) => number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counts)
      .map(([k, v]) => [k, per(v)] as const)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1]),
  );
}

/**
 * The measured window: from the first point half a period after a tick at or after `earliest`,
 * for as many whole periods as end by `latest`, and at least those of `minMs` (and one). Both edges fall at the same
 * point of the schedule's cycle, so the window holds as many ticks' runs as ticks' CPU (a
 * window of 56 s held 5 or 6 bursts of runs depending on its phase, and the CPU per run with
 * them); and that point is half a period after a tick, so an edge never falls inside the
 * spread of one tick's starts (edges one period apart inside S3's 1,000 starts once counted
 * the runs of a sixth tick in a window of five).
 */
export function measuredWindow(earliest: number, latest: number, periodMs: number, minMs = periodMs): { from: number; to: number } {
  const half = periodMs / 2;
  const from = Math.ceil((earliest - half) / periodMs) * periodMs + half;
  const periods = Math.max(1, Math.ceil(minMs / periodMs), Math.floor((latest - from) / periodMs));
  return { from, to: from + periods * periodMs };
}

/** The harness's INFO at the start of the window is itself counted by Redis. */
const OWN_COMMANDS_IN_WINDOW = 1;

/** Runs `system` through `scenario`; resolves once the figures are known (processes may still be stopping: see `done`). */
export async function runTimed(scenario: TimedScenario, system: SystemName, leaseMs: number, dir: string): Promise<{ figures: TimedFigures; done: Promise<void> }> {
  const redis = await startBenchRedis();
  const prefix = `bench-${scenario.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${system}`;
  const files: string[] = [];
  const workers: WorkerProc[] = [];
  const t0 = Date.now();
  const stopAll = async (): Promise<void> => {
    await Promise.all(workers.map((w) => w.stop(3_000)));
    await redis.stop();
  };
  try {
    const processes = system === FLOOR ? 1 : scenario.processes;
    for (let index = 0; index < processes; index++) {
      const recordFile = join(dir, `${prefix}-${index}.runs`);
      files.push(recordFile);
      workers.push(spawnWorker({ system, index, redisUrl: redis.url, prefix, jobs: scenario.jobs, cron: scenario.cron, periodMs: scenario.periodMs, leaseMs, recordFile, setup: index === 0 }));
    }
    await Promise.all(workers.map((w) => w.ready));
    const { from, to } = measuredWindow(Date.now() + scenario.settleMs, t0 + scenario.durationMs - scenario.tailMs, scenario.periodMs, scenario.minWindowMs);
    // A slow start may push the window's end past the scenario's duration: the processes then
    // run longer, so the window still holds its shortest length and its last runs are seen.
    const endAt = Math.max(t0 + scenario.durationMs, to + scenario.tailMs);

    const edge = async (alive: WorkerProc[]): Promise<Edge> => {
      const at = Date.now();
      const [counters, ...snaps] = await Promise.all([redis.counters(), ...alive.map((w) => w.snapshot())]);
      return { at, redis: counters, workers: new Map(alive.map((w, i) => [w.index, snaps[i] as Snapshot])) };
    };
    await sleepUntil(from);
    const start = await edge(workers);

    let crashAt: number | undefined;
    let victim: WorkerProc | undefined;
    let lastOfVictim: Snapshot | undefined;
    if (scenario.crash) {
      // A third of the way through, the first process to start a run dies a moment later,
      // with runs in flight whatever the system's lateness.
      await sleepUntil(t0 + scenario.durationMs / 3);
      const index = await firstToRun(files, 2 * scenario.periodMs);
      victim = workers[index];
      lastOfVictim = await victim?.snapshot(); // its counters up to here (a millisecond or two)
      victim?.kill();
      crashAt = Date.now();
    }
    await sleepUntil(to);
    const end = await edge(workers.filter((w) => w !== victim));
    if (victim && lastOfVictim) end.workers.set(victim.index, lastOfVictim);
    await sleepUntil(endAt);
    const done = stopAll();

    const runs: RunRecord[] = files.flatMap((f, i) => readRuns(f, i));
    const crash = victim && crashAt !== undefined ? { atMs: crashAt, worker: victim.index, leaseMs } : undefined;
    const ticks = analyzeRuns({ runs, jobs: scenario.jobs, periodMs: scenario.periodMs, from, to, crash });
    const inWindow = runs.filter((r) => r.start >= start.at && r.start < end.at).length;
    const per = (v: number): number => (inWindow === 0 ? 0 : r2(v / inWindow));
    let cpuUs = 0;
    let commands = 0;
    let batches = 0;
    let rss = 0;
    let drift = 0;
    const extra: Record<string, number> = {};
    const sent: Record<string, number> = {};
    const perWorker: Array<{ index: number; runs: number; cpuMs: number }> = [];
    for (const [index, last] of end.workers) {
      const first = start.workers.get(index);
      if (!first) continue;
      cpuUs += last.cpuUs - first.cpuUs;
      const own = runs.filter((r) => r.worker === index && r.start >= start.at && r.start < end.at).length;
      perWorker.push({ index, runs: own, cpuMs: r2((last.cpuUs - first.cpuUs) / 1000) });
      commands += last.clients.commands - first.clients.commands;
      batches += last.clients.batches - first.clients.batches;
      if (index !== victim?.index) rss = Math.max(rss, last.rssBytes);
      drift = Math.max(drift, Math.abs(last.clockDriftMs));
      for (const [k, v] of Object.entries(last.extra)) extra[k] = (extra[k] ?? 0) + v - (first.extra[k] ?? 0);
      for (const [k, v] of Object.entries(last.clients.byName)) sent[k] = (sent[k] ?? 0) + v - (first.clients.byName[k] ?? 0);
    }
    const figures: TimedFigures = {
      runs: inWindow,
      duplicates: ticks.duplicates,
      extraRuns: ticks.extraRuns,
      misses: ticks.misses,
      expectedTicks: ticks.expectedTicks,
      latenessMs: ticks.latenessMs,
      steadyLatenessMs: ticks.steadyLatenessMs,
      byTick: ticks.byTick,
      redisCommandsPerRun: per(end.redis.commands - start.redis.commands - OWN_COMMANDS_IN_WINDOW),
      redisRoundTripsPerRun: per(commands),
      redisBatchesPerRun: per(batches),
      redisCpuMsPerRun: per(end.redis.cpuMs - start.redis.cpuMs),
      redisExecMsPerRun: Math.round((inWindow === 0 ? 0 : (end.redis.execMs - start.redis.execMs) / inWindow) * 1000) / 1000,
      cpuMsPerRun: per(cpuUs / 1000),
      rssMb: r2(rss / 2 ** 20),
      windowMs: end.at - start.at,
      redisCommandsByName: perName(delta(start.redis.byName, end.redis.byName), per),
      sentByName: perName(sent, per),
      perRun: Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, per(v)])),
      ...(ticks.crash && crash ? { crash: { ...ticks.crash, atMs: crash.atMs - t0, leaseMs } } : {}),
      clockDriftMs: r2(drift),
      workers: perWorker.sort((a, b) => a.index - b.index),
    };
    return { figures, done };
  } catch (err) {
    const tails = workers.map((w) => w.stderr()).filter((e) => e !== '').join('\n');
    await stopAll();
    throw new Error(`${scenario.name}/${system}: ${err instanceof Error ? err.message : String(err)}${tails ? `\n${tails}` : ''}`, { cause: err });
  }
}
