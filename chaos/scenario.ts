/**
 * What every fault scenario shares: its type, a private Redis and run log per run, and the
 * figures computed from the run log and Redis's counters.
 * @module
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { keys } from '../src/redis/keys.js';
import { MAX_CLAIM_LEAD_MS } from '../src/runner/leads.js';
import { startRedis, type TestRedis } from '../test/helpers/redis.js';
import { Cluster, readCounters } from './cluster.js';
import type { ChaosJobId } from './jobs.js';
import type { Checks, Figures } from './report.js';
import { duplicateTicks, endOf, finishedBy, readRunLog, startsOf, type RunLine } from './runlog.js';

/** How a scenario is run. */
export interface ScenarioContext {
  /** Shortened: smaller waits and fewer repetitions (`CHAOS_QUICK=1`, and `npm test`). */
  readonly quick: boolean;
  /** A directory of its own for run logs. */
  readonly dir: string;
  /** Progress lines for people. */
  log(line: string): void;
}

/** A fault scenario. */
export interface Scenario {
  readonly name: string;
  /** The faults it injects, in a few words (a table cell). */
  faults(quick: boolean): string;
  run(ctx: ScenarioContext): Promise<Figures>;
  /** Too long for `npm test`'s shortened run (`test/chaos.test.ts`); a test file of its own covers the fault. */
  readonly long?: boolean;
}

/** A private Redis, a cluster on it with a run log, and their teardown. */
export interface Stage {
  readonly redis: TestRedis;
  /** A client of {@link redis} for reading counters. */
  readonly client: Redis;
  readonly cluster: Cluster;
  readonly prefix: string;
  readonly runLog: string;
  /** Stops every node still alive, then Redis; safe to call twice. */
  teardown(): Promise<void>;
}

let stageSeq = 0;

/** Starts a private Redis and prepares a cluster of chaos nodes on it (no node started yet). */
export async function stage(ctx: ScenarioContext, name: string, jobs: readonly ChaosJobId[], opts: { appendonly?: boolean; env?: Record<string, string> } = {}): Promise<Stage> {
  const redis = await startRedis({ appendonly: opts.appendonly ?? false });
  const prefix = `chaos-${name}-${++stageSeq}`;
  const runLog = join(mkdtempSync(join(ctx.dir, `${name}-`)), 'runs.jsonl');
  const cluster = new Cluster({ redisUrl: redis.url, prefix, runLog, jobs, ...(opts.env ? { env: opts.env } : {}) });
  let client: Redis | undefined;
  let down: Promise<void> | undefined;
  return {
    redis,
    get client(): Redis {
      client ??= redis.client();
      return client;
    },
    cluster,
    prefix,
    runLog,
    teardown() {
      down ??= (async () => {
        await cluster.stopAll();
        await redis.stop();
      })();
      return down;
    },
  };
}

/**
 * Waits until the middle of a second (x.500 s). Stops are sent there, away from the 1 s
 * job's ticks: a stop that meets a claim in flight is a fault of its own, with a scenario of
 * its own (`stop-claim.ts`), and must not blur the others.
 */
export function awayFromTicks(): Promise<void> {
  const now = Date.now();
  const target = Math.floor(now / 1_000) * 1_000 + 500;
  return sleep(target > now ? target - now : target + 1_000 - now);
}

/**
 * The end of a scenario: away from the ticks, stops every node still alive gracefully, checks
 * that each exited 0, and reads the run log. `stopAt` (when the stop was decided) ends the
 * window the scenario judges.
 */
export async function stopGracefully(s: Stage, c: Checks, what = 'exit codes of the graceful stops'): Promise<{ stopAt: number; all: RunLine[] }> {
  const stopAt = Date.now();
  await awayFromTicks();
  const codes = await s.cluster.stopAll();
  c.equal(what, codes.filter((x) => x !== 0).length, 0, `codes ${codes.join(',')}`);
  return { stopAt, all: readRunLog(s.runLog) };
}

/** The ticks of a 1 s grid in [from, to], epoch ms. */
export function secondTicks(from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = Math.ceil(from / 1000) * 1000; t <= to; t += 1000) out.push(t);
  return out;
}

/** A time window [from, to], epoch ms. */
export interface Window {
  readonly from: number;
  readonly to: number;
}

/** How many of the ticks of a 1 s grid in `windows` a job ran (at least once), of how many. */
export function tickCoverage(lines: readonly RunLine[], job: string, windows: readonly Window[]): { expected: number; done: number; notRun: number[] } {
  const ran = new Set(startsOf(lines, job).map((l) => l.tick));
  const ticks = windows.flatMap((w) => (w.to > w.from ? secondTicks(w.from, w.to) : []));
  const notRun = ticks.filter((t) => !ran.has(t));
  return { expected: ticks.length, done: ticks.length - notRun.length, notRun };
}

/** Ticks started more than once, over the given installation jobs. */
export function duplicates(lines: readonly RunLine[], jobs: readonly string[]): number {
  return jobs.reduce((n, job) => n + duplicateTicks(lines, job).length, 0);
}

/** What {@link compareCounts} allows besides the exact outcomes. */
export interface CountOptions {
  /** Runs the counters may lack (stats a stopping node could not write). */
  readonly allowedLoss?: number;
  /**
   * A run that started and never ended counts as `lost` (its node died), or as `interrupted`
   * (its worker thread was terminated by a stop).
   */
  readonly unendedAs?: 'lost' | 'interrupted';
  /**
   * When Redis could not be reached: a run that ended then had its lease never released, and is
   * recorded once, with its outcome by its node or `lost` by the claim that reached Redis first.
   */
  readonly outages?: readonly Window[];
  /**
   * Runs of each job that a killed node had claimed and not started (see {@link unstartedAtKill}):
   * Redis records each once, as lost, and the run log has no line of it.
   */
  readonly unstarted?: Partial<Record<ChaosJobId, number>>;
}

/**
 * Compares Redis's counters of `jobs` with the run log (after every node has stopped and
 * flushed): runs that ended in the log against `runs - failed` (the jobs here never fail on
 * their own; a failed run is a claim Redis could not answer, which never reached the
 * handler), and each outcome against the log's ends and aborts (see {@link CountOptions}).
 * Adds a check per job; returns the runs the counters lack (negative when they have too many).
 */
export async function compareCounts(c: Checks, s: Stage, lines: readonly RunLine[], jobs: readonly ChaosJobId[], opts: CountOptions = {}): Promise<number> {
  const { allowedLoss = 0, unendedAs = 'lost', outages = [], unstarted = {} } = opts;
  let lost = 0;
  for (const job of jobs) {
    const counters = await readCounters(s.client, s.prefix, job);
    const by = finishedBy(lines, job);
    // Runs that never ended (their node was killed) are recorded once each, as lost, by the
    // next claim of the job; a run that lost its lease is recorded once, lockLost by its node or
    // lost by the claim that took the lease over first. A run on a worker thread that a stop
    // terminated never ends either, and is recorded interrupted (`unendedAs`).
    const unended = startsOf(lines, job).filter((l) => endOf(lines, l) === undefined).length;
    const claimedOnly = unstarted[job] ?? 0;
    const [gone, stopped] = unendedAs === 'lost' ? [unended + claimedOnly, 0] : [claimedOnly, unended];
    const finished = [...by.values()].reduce((a, b) => a + b, 0) + unended + claimedOnly;
    const counted = (counters['runs'] ?? 0) - (counters['failed'] ?? 0);
    lost += finished - counted;
    const leaseGone = (counters['lockLost'] ?? 0) + (counters['lost'] ?? 0);
    const [succeeded, interrupted] = [counters['succeeded'] ?? 0, counters['interrupted'] ?? 0];
    const [ends, aborts] = [by.get('end') ?? 0, (by.get('shutdown') ?? 0) + stopped];
    const outcomes = job === 'blocker'
      ? `lockLost ${counters['lockLost'] ?? 0}, lost ${counters['lost'] ?? 0} (log: ${finished} runs, each past its lease)`
      : `succeeded ${succeeded}/${ends}, lockLost+lost ${counters['lockLost'] ?? 0}+${counters['lost'] ?? 0}/${by.get('lockLost') ?? 0}+${gone} never ended${claimedOnly > 0 ? ` (${claimedOnly} claimed, not started)` : ''}, interrupted ${interrupted}/${by.get('shutdown') ?? 0}${stopped > 0 ? `+${stopped} terminated` : ''}`;
    // Outcomes a claim's `lost` stands for: at most the runs that ended within an outage.
    const inOutage = lines.filter((l) => l.job === job && l.ev !== 'start' && outages.some((w) => l.t >= w.from && l.t <= w.to)).length;
    const asLost = ends - succeeded + (aborts - interrupted);
    const sameOutcomes = job === 'blocker'
      || (succeeded <= ends && interrupted <= aborts && (counters['lockLost'] ?? 0) <= (by.get('lockLost') ?? 0)
        && leaseGone === (by.get('lockLost') ?? 0) + gone + asLost && asLost <= inOutage);
    const within = finished - counted >= 0 && finished - counted <= allowedLoss;
    c.add(
      `${job}: Redis counters match the run log`,
      within && (allowedLoss > 0 || sameOutcomes),
      `log ${finished} runs ended, Redis runs-failed ${counted} (runs ${counters['runs'] ?? 0}, failed claims ${counters['failed'] ?? 0}); Redis/log: ${outcomes}${allowedLoss > 0 ? `; up to ${allowedLoss} may be lost` : ''}${outages.length > 0 ? `; ${asLost} recorded lost by a claim, of the ${inOutage} that ended while Redis was unreachable` : ''}`,
    );
  }
  return lost;
}

/** A recent run of a job as Redis keeps it (the members the scenarios read). */
export interface RecentRun {
  readonly outcome: string;
  readonly instance: string;
  readonly scheduledAt: string;
  readonly fencingToken: number | null;
}

/** The recent runs Redis keeps of `job`, newest first. */
export async function recentRuns(s: Stage, job: ChaosJobId): Promise<RecentRun[]> {
  return (await s.client.lrange(keys(s.prefix).runs(job), 0, -1)).map((r) => JSON.parse(r) as RecentRun);
}

/**
 * Runs of `job` that node `victim`, killed at `killAt`, had claimed and not started. A claim goes
 * out up to {@link MAX_CLAIM_LEAD_MS} ahead of its tick, so a kill can fall between a granted
 * claim and its run: the lease holds the job, and the claim that takes it over records the run
 * lost (its tick did not run), with no line in the run log. Each is read from the job's recent
 * runs: recorded lost, on the victim, a tick due near the kill, a token the run log never started.
 */
export async function unstartedAtKill(s: Stage, lines: readonly RunLine[], job: ChaosJobId, victim: string, killAt: number): Promise<number> {
  const started = new Set(startsOf(lines, job).map((l) => l.token));
  return (await recentRuns(s, job)).filter((r) => {
    const due = Date.parse(r.scheduledAt);
    return r.outcome === 'lost' && r.instance === victim && !started.has(r.fencingToken ?? undefined)
      && due >= killAt - 1_000 && due <= killAt + MAX_CLAIM_LEAD_MS;
  }).length;
}

/** Redis's `missed` counters of `jobs`, added up. */
export async function missedCount(s: Stage, jobs: readonly ChaosJobId[]): Promise<number> {
  let n = 0;
  for (const job of jobs) n += (await readCounters(s.client, s.prefix, job))['missed'] ?? 0;
  return n;
}
