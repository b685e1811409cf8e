/**
 * The scenarios and the benchmark's settings, read from the environment.
 * @module
 */
import { FLOOR, SYSTEMS, type SystemName } from './protocol.js';

/** A scenario that runs a system's processes for a while and judges every tick (S1 to S3, each size of S5). */
export interface TimedScenario {
  /** `S1` to `S3`; a size of S5 is `S5 N=<processes>`. */
  readonly name: string;
  readonly description: string;
  readonly jobs: number;
  readonly cron: string;
  readonly periodMs: number;
  readonly processes: number;
  /** From spawning the processes to stopping them. */
  readonly durationMs: number;
  /**
   * Ticks are judged from the first point half a period after a tick that comes this long
   * after every process is ready (S3: 70 s, or 30 s quick, leave at least five whole periods, or one,
   * after a start of up to 7 s and the wait for that point)...
   */
  readonly settleMs: number;
  /** ...to this long before the processes stop, so late runs of the last ticks are seen. */
  readonly tailMs: number;
  /** The shortest window; the processes run longer when their start leaves less. */
  readonly minWindowMs: number;
  /** kill -9 one process a third of the way through. */
  readonly crash: boolean;
}

/** S4: the status API and the memory of a node holding many jobs. */
export interface StatusScenario {
  readonly name: 'S4';
  readonly description: string;
  readonly jobs: number;
  readonly cron: string;
  readonly processes: number;
  /** How long requests are sent, one every `requestEveryMs`. */
  readonly requestsForMs: number;
  readonly requestEveryMs: number;
  /** Jobs held by the node whose memory is measured. */
  readonly holdJobs: number;
  readonly holdCron: string;
  /** How long requests are sent to the holding node after its first (one every 50 ms). */
  readonly holdRequestsForMs: number;
  /** How long the holding node runs before its RSS is read. */
  readonly holdSettleMs: number;
  /** Then how long its CPU is measured with none of its jobs due. */
  readonly holdIdleForMs: number;
  /** Whether the peers' workers hold 10,000 jobs too (for comparison; left out of the quick mode). */
  readonly holdPeers: boolean;
}

/** Every scenario name. */
export const SCENARIO_NAMES = ['S1', 'S2', 'S3', 'S4', 'S5'] as const;
/** One of {@link SCENARIO_NAMES}. */
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/** The benchmark's settings. */
export interface BenchSettings {
  readonly quick: boolean;
  readonly scenarios: readonly ScenarioName[];
  readonly systems: readonly SystemName[];
  /** Lease time of leasehold jobs, TTL of redlock locks, lock and stalled-check time of BullMQ. */
  readonly leaseMs: number;
  /** Overrides the duration of S1 to S3 (seconds); for the harness's own test. */
  readonly durationOverrideMs: number | undefined;
  /** Where the results are written. */
  readonly outFile: string;
  /** The sizes of the cluster S5 runs, in processes (`BENCH_S5_NODES`, default 3,9,27). */
  readonly scaleOutNodes: readonly number[];
}

function list<T extends string>(raw: string | undefined, all: readonly T[], what: string): T[] {
  if (raw === undefined || raw.trim() === '') return [...all];
  const picked = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const p of picked) {
    if (!(all as readonly string[]).includes(p)) throw new Error(`${what}: unknown ${JSON.stringify(p)}; expected some of ${all.join(',')}`);
  }
  return all.filter((a) => picked.includes(a));
}

function positive(raw: string | undefined, what: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const v = Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${what}: ${JSON.stringify(raw)} is not a positive number`);
  return v;
}

function sizes(raw: string | undefined, what: string): number[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw.split(',').map((part) => {
    const n = Number(part.trim());
    if (!Number.isInteger(n) || n < 1 || n > 200) throw new Error(`${what}: ${JSON.stringify(part.trim())} is not a number of processes from 1 to 200`);
    return n;
  });
}

/** Reads the settings from `env`. */
export function readSettings(env: NodeJS.ProcessEnv, defaultOut: string): BenchSettings {
  const duration = positive(env['BENCH_DURATION_S'], 'BENCH_DURATION_S');
  const quick = env['BENCH_QUICK'] === '1' || env['BENCH_QUICK'] === 'true';
  return {
    quick,
    scenarios: list(env['BENCH_SCENARIOS'], SCENARIO_NAMES, 'BENCH_SCENARIOS'),
    // The floor costs a run of S1; the quick mode leaves it out unless asked for.
    systems: list(env['BENCH_SYSTEMS'], SYSTEMS, 'BENCH_SYSTEMS').filter((sys) => env['BENCH_SYSTEMS'] !== undefined || !quick || sys !== FLOOR),
    leaseMs: positive(env['BENCH_LEASE_MS'], 'BENCH_LEASE_MS') ?? 5_000,
    durationOverrideMs: duration === undefined ? undefined : duration * 1000,
    // A quick run never overwrites the committed full-run results.
    outFile: env['BENCH_OUT'] ?? (quick ? defaultOut.replace(/\.json$/, '.quick.json') : defaultOut),
    scaleOutNodes: sizes(env['BENCH_S5_NODES'], 'BENCH_S5_NODES') ?? [3, 9, 27],
  };
}

/** S1 to S3 as the settings shape them. */
export function timedScenario(name: 'S1' | 'S2' | 'S3', s: BenchSettings): TimedScenario {
  const base = { settleMs: 300, tailMs: 1_000, minWindowMs: 1_000, crash: false };
  const secs = (full: number, quick: number): number => s.durationOverrideMs ?? (s.quick ? quick : full) * 1000;
  switch (name) {
    case 'S1':
      return { ...base, name, description: '20 installation jobs every second, 3 processes', jobs: 20, cron: '* * * * * *', periodMs: 1_000, processes: 3, durationMs: secs(60, 15) };
    case 'S2':
      return { ...base, name, description: 'as S1, kill -9 of one process a third of the way through', jobs: 20, cron: '* * * * * *', periodMs: 1_000, processes: 3, durationMs: secs(60, 15), crash: true };
    case 'S3':
      return { ...base, name, description: '1,000 installation jobs every 10 s, 3 processes', jobs: 1_000, cron: '*/10 * * * * *', periodMs: 10_000, processes: 3, durationMs: secs(70, 30), settleMs: 500, tailMs: 2_500, minWindowMs: 10_000 };
  }
}

/**
 * S5, scale-out: 100 installation jobs every second on each size of the cluster in turn, one
 * timed run per size. The window opens a heartbeat (5 s) after the last process is ready, so
 * every node has seen every other; it is 60 s long (5 s quick) whatever the start took: 6,000
 * runs, about 220 per node at N = 27, so a node's share is known to about 7% (one standard
 * deviation of a fair draw), where the 5 s of the quick mode leave it to chance.
 */
export function scaleOutScenarios(s: BenchSettings): TimedScenario[] {
  const windowMs = s.durationOverrideMs ?? (s.quick ? 5_000 : 60_000);
  return s.scaleOutNodes.map((processes) => ({
    name: `S5 N=${processes}`,
    description: `100 installation jobs every second, ${processes} processes`,
    jobs: 100,
    cron: '* * * * * *',
    periodMs: 1_000,
    processes,
    // The window's length is what matters; the start of 27 processes takes a while on 2 cores.
    durationMs: windowMs,
    settleMs: 5_500,
    tailMs: 1_000,
    minWindowMs: windowMs,
    crash: false,
  }));
}

/**
 * The systems S5 compares: leasehold, and the two whose every node tries every tick, so that
 * their cost grows with N: the hand-written croner+redlock and node-cron's distributed mode.
 */
export const SCALE_OUT_SYSTEMS: readonly SystemName[] = ['leasehold', 'croner-redlock', 'node-cron'];

/** The systems S4 holds 10,000 jobs with (the floor is no peer; node-cron is compared in S1 to S3 and S5). */
export const STATUS_SYSTEMS: readonly SystemName[] = ['leasehold', 'bullmq', 'croner-redlock'];

/** S4 as the settings shape it. */
export function statusScenario(s: BenchSettings): StatusScenario {
  return {
    name: 'S4',
    description: 'GET /manage/jobs with 1,000 jobs on 3 instances; RSS of one process holding 10,000 jobs',
    jobs: 1_000,
    cron: '*/10 * * * * *',
    processes: 3,
    requestsForMs: s.quick ? 2_000 : 25_000,
    requestEveryMs: 10,
    holdJobs: 10_000,
    holdCron: '0 0 * * * *',
    holdRequestsForMs: s.quick ? 0 : 5_000,
    holdSettleMs: s.quick ? 500 : 5_000,
    holdIdleForMs: s.quick ? 1_000 : 20_000,
    holdPeers: !s.quick,
  };
}
