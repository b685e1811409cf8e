/**
 * From recorded runs to figures: duplicates, misses, lateness, and after a crash the ticks
 * run late and the crashed process's ticks run again.
 * @module
 */
import { readFileSync, existsSync } from 'node:fs';
import { BODY_MS } from './protocol.js';

/** One recorded run. */
export interface RunRecord {
  readonly job: number;
  /** The tick it ran for, epoch ms. */
  readonly tick: number;
  /** When the body started, epoch ms. */
  readonly start: number;
  /** Index of the process that ran it. */
  readonly worker: number;
}

/** p50, p99 and max of a set of ms values (0 when empty), rounded to 0.1 ms. */
export interface Spread {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Reads the `job tick start` lines of one worker's file. */
export function readRuns(file: string, worker: number): RunRecord[] {
  if (!existsSync(file)) return [];
  const out: RunRecord[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [job, tick, start] = line.split(' ').map(Number);
    if (job === undefined || tick === undefined || start === undefined || !Number.isFinite(start)) continue;
    out.push({ job, tick, start, worker });
  }
  return out;
}

const round1 = (v: number): number => Math.round(v * 10) / 10;

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? 0;
}

/** p50, p99 and max of `values`. */
export function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round1(percentile(sorted, 50)), p99: round1(percentile(sorted, 99)), max: round1(sorted.at(-1) ?? 0) };
}

/** A kill -9 during the run. */
export interface Crash {
  readonly atMs: number;
  readonly worker: number;
  /** The lease (lock, stalled-job) time the systems were given. */
  readonly leaseMs: number;
}

/** What {@link analyzeRuns} needs. */
export interface AnalyzeInput {
  readonly runs: readonly RunRecord[];
  readonly jobs: number;
  readonly periodMs: number;
  /** Ticks in [from, to) are judged; the edges of the run are outside. */
  readonly from: number;
  readonly to: number;
  readonly crash?: Crash | undefined;
}

/**
 * Ticks due this long after the window opens are the steady state. A node's first ticks run cold
 * (its code not yet optimized, its heap still growing, its claim lead not yet fitted to the
 * round trip): in S3 they were late by 60 to 230 ms where later ticks were late by 10 to 70.
 */
export const STEADY_AFTER_MS = 30_000;

/** The lateness of the runs of one tick instant of the window (every job due then). */
export interface TickLateness {
  /** When the tick was due, ms after the window opened. */
  readonly dueMs: number;
  readonly runs: number;
  readonly p50: number;
  readonly max: number;
}

/** Figures about the ticks of the window. */
export interface TickFigures {
  readonly expectedTicks: number;
  /** Ticks run more than once. */
  readonly duplicates: number;
  /** Runs beyond the first of a tick. */
  readonly extraRuns: number;
  /** Ticks never run. */
  readonly misses: number;
  /** Start minus tick, over every run of a tick in the window. */
  readonly latenessMs: Spread;
  /** The same over the ticks due {@link STEADY_AFTER_MS} or more after the window opens (all of them in a shorter window). */
  readonly steadyLatenessMs: Spread;
  /** Lateness tick by tick, in due order: which of a node's first ticks or which later one is late. */
  readonly byTick: readonly TickLateness[];
  readonly crash?: CrashFigures;
}

/** Figures about a crash. */
export interface CrashFigures {
  /** Ticks first run more than one period after they were due, and how late. */
  readonly lateTicks: number;
  readonly lateMs: Spread;
  /** Misses outside (crash - period, crash + lease + period]: not explained by the dead node's lease. */
  readonly missesBeyondLease: number;
  /** Runs the dead process had started less than a body's time before it died. */
  readonly inFlightAtKill: number;
  /** Ticks the dead process had started that another process ran again, and how late. */
  readonly inFlightRerun: number;
  readonly inFlightRerunLateMs: Spread;
  /**
   * The first run of every tick due after the kill, how late: a tick whose first-ranked node
   * is the dead one starts a hand-off delay late until the live nodes drop it.
   */
  readonly afterKillMs: Spread;
  /** Of those, ticks first run 50 ms late or more (taken over by a backup, or retried). */
  readonly afterKillLate: number;
}

/** Duplicates, misses and lateness of the ticks in the window. */
export function analyzeRuns(input: AnalyzeInput): TickFigures {
  const { periodMs, from, to, crash } = input;
  const first = Math.ceil(from / periodMs) * periodMs;
  const slots = Math.max(0, Math.ceil((to - first) / periodMs));
  // byTick[job][k]: runs of tick first + k * period, in start order.
  const byTick: RunRecord[][][] = Array.from({ length: input.jobs }, () => Array.from({ length: slots }, () => []));
  const lateness: number[] = [];
  const steady: number[] = [];
  const perSlot: number[][] = Array.from({ length: slots }, () => []);
  const steadyFrom = to - from > STEADY_AFTER_MS ? from + STEADY_AFTER_MS : from;
  for (const r of input.runs) {
    if (r.tick < first || r.tick >= to) continue;
    const k = (r.tick - first) / periodMs;
    const cell = Number.isInteger(k) ? byTick[r.job]?.[k] : undefined;
    if (cell === undefined) continue;
    cell.push(r);
    lateness.push(r.start - r.tick);
    perSlot[k]?.push(r.start - r.tick);
    if (r.tick >= steadyFrom) steady.push(r.start - r.tick);
  }
  let duplicates = 0;
  let extraRuns = 0;
  let misses = 0;
  let missesBeyondLease = 0;
  let inFlightRerun = 0;
  const late: number[] = [];
  const inFlightAtKill = crash ? input.runs.filter((r) => r.worker === crash.worker && r.start <= crash.atMs && r.start > crash.atMs - BODY_MS).length : 0;
  const rerunLate: number[] = [];
  const afterKill: number[] = [];
  for (const ticks of byTick) {
    ticks.forEach((cell, k) => {
      const tick = first + k * periodMs;
      if (cell.length === 0) {
        misses++;
        if (crash && !(tick > crash.atMs - periodMs && tick <= crash.atMs + crash.leaseMs + periodMs)) missesBeyondLease++;
        return;
      }
      cell.sort((a, b) => a.start - b.start);
      if (cell.length > 1) {
        duplicates++;
        extraRuns += cell.length - 1;
      }
      const head = cell[0];
      if (crash && head !== undefined) {
        if (tick > crash.atMs) afterKill.push(head.start - tick);
        if (head.start - tick > periodMs) late.push(head.start - tick);
        if (head.worker === crash.worker) {
          const again = cell.find((r) => r.worker !== crash.worker && r.start > crash.atMs);
          if (again !== undefined) {
            inFlightRerun++;
            rerunLate.push(again.start - tick);
          }
        }
      }
    });
  }
  const lateByTick = perSlot.map((ms, k) => {
    const { p50, max } = spread(ms);
    return { dueMs: first + k * periodMs - from, runs: ms.length, p50, max };
  });
  const figures = { expectedTicks: input.jobs * slots, duplicates, extraRuns, misses, latenessMs: spread(lateness), steadyLatenessMs: spread(steady), byTick: lateByTick };
  if (!crash) return figures;
  return {
    ...figures,
    crash: {
      inFlightAtKill,
      lateTicks: late.length,
      lateMs: spread(late),
      missesBeyondLease,
      inFlightRerun,
      inFlightRerunLateMs: spread(rerunLate),
      afterKillMs: spread(afterKill),
      afterKillLate: afterKill.filter((ms) => ms >= 50).length,
    },
  };
}
