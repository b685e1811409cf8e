/**
 * The series of each job a node runs: runs by outcome, their durations and start lag, skips,
 * missed ticks, leases lost, and the gauges of its streak, last success, interval, invalid
 * schedule and success deadline. The first jobs have series of their own, the rest share
 * `job="(other)"` (see ./job-series.ts).
 * @module
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Scheduler } from '../runner/runner.js';
import { countsInStreak, RunOutcomes, SkipReasons } from '../runner/events.js';
import { checkJobLimit, DEFAULT_JOB_LIMIT, JobLabels, OTHER_JOBS } from './job-series.js';

/** Buckets of run durations, in seconds: from 10 ms to an hour. */
export const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600];
/** Buckets of start lag (actual start minus scheduled tick), in seconds. */
export const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** What the metrics need of a runner. */
export type MetricsCore = Pick<Scheduler, 'on' | 'jobs' | 'has' | 'intervalOf'>;

/** A job's success deadline, as the cluster's status judges it (see {@link RunnerMetricsOptions.successDeadlines}). */
export interface SuccessDeadline {
  readonly jobId: string;
  /** Epoch ms by which a success is due; null when none is (no schedule known, paused, orphaned). */
  readonly dueBy: number | null;
}

/** Options of {@link jobMetrics}. */
export interface JobMetricsOptions {
  /** How many jobs have series of their own; default 1,000. */
  readonly jobLimit?: number | undefined;
  /** The success deadlines, read at a scrape; without a source the gauge has no series. */
  readonly successDeadlines?: (() => Promise<readonly SuccessDeadline[]>) | undefined;
}

/** A node's job series: add jobs (a removed job's go on the runner's `jobRemoved`), and stop listening. */
export interface JobMetrics {
  addJob(jobId: string, scope: 'instance' | 'installation'): void;
  detach(): void;
}

/**
 * Drops a gauge's series once the scrape that made them has read them: a gauge remade from its
 * source at every scrape would otherwise hold a series per job between scrapes (its labels,
 * label hash and entry: about 40 MB for 100,000 jobs and two such gauges). prom-client reads
 * the series right after `collect` returns, before anything scheduled with `setImmediate`.
 */
function forgetAfterScrape(gauge: { reset(): void }): void {
  setImmediate(() => gauge.reset());
}

/** Creates the job series in `registers`, for the runner's jobs, and subscribes them to its events. */
export function jobMetrics(core: MetricsCore, registers: Registry[], opts: JobMetricsOptions): JobMetrics {
  // The folded series are made with zero values once a first job is folded, so rates work from then.
  const labels = new JobLabels(checkJobLimit(opts.jobLimit ?? DEFAULT_JOB_LIMIT), () => zeroCounters(OTHER_JOBS, true));
  // What the gauges of the folded jobs show: the longest failing streak among them, and whether one is invalid.
  const otherStreaks = new Map<string, number>();
  const otherInvalid = new Set<string>();
  // prom-client's documented inc/set/observe hash the labels on every call: a small cost per run, measured in docs/benchmarks.md.
  const runs = new Counter({ name: 'leasehold_job_runs_total', help: 'Runs that ended, by job and outcome.', labelNames: ['job', 'outcome'], registers });
  const durations = new Histogram({ name: 'leasehold_job_run_duration_seconds', help: 'Duration of runs, by job and outcome.', labelNames: ['job', 'outcome'], buckets: [...DURATION_BUCKETS], registers });
  const skips = new Counter({ name: 'leasehold_job_skips_total', help: 'Starts that did not happen, by job and reason (overrun, claimed, paused).', labelNames: ['job', 'reason'], registers });
  const missed = new Counter({ name: 'leasehold_job_missed_total', help: 'Ticks no instance ran, counted by the node that claimed the next tick.', labelNames: ['job'], registers });
  const lag = new Histogram({ name: 'leasehold_job_start_lag_seconds', help: 'Actual start minus scheduled tick of scheduled runs, by job.', labelNames: ['job'], buckets: [...LAG_BUCKETS], registers });
  const leaseLost = new Counter({ name: 'leasehold_lease_lost_total', help: 'Runs aborted because their lease was lost, by job.', labelNames: ['job'], registers });
  const streak = new Gauge({
    name: 'leasehold_job_failing_streak',
    help: 'Unsuccessful runs (failed, timedOut, lockLost, lost) in a row on this node since its last success, by job (job="(other)": the longest of the jobs beyond the node\'s job limit).',
    labelNames: ['job'],
    registers,
    collect() {
      if (!labels.anyFolded) return;
      let longest = 0;
      for (const n of otherStreaks.values()) longest = Math.max(longest, n);
      this.set({ job: OTHER_JOBS }, longest);
    },
  });
  const lastSuccess = new Gauge({ name: 'leasehold_job_last_success_timestamp_seconds', help: 'End of the last successful run on this node (epoch seconds; 0 before the first), by job.', labelNames: ['job'], registers });
  // Kept as numbers and turned into series at a scrape: a series held per job between scrapes
  // (its labels object, label hash and entry) was about 120 bytes a job (1.2 MB at 10,000 jobs).
  const intervals = new Map<string, number>();
  new Gauge({
    name: 'leasehold_job_interval_seconds',
    help: 'Nominal interval of the job\'s schedule as it applies now, by job.',
    labelNames: ['job'],
    registers,
    collect() {
      this.reset();
      for (const [job, ms] of intervals) this.set({ job }, ms / 1000);
      forgetAfterScrape(this);
    },
  });
  const deadlines = opts.successDeadlines;
  new Gauge({
    name: 'leasehold_job_success_deadline_timestamp_seconds',
    help: 'When a successful run of the job is due at the latest (epoch seconds): the third scheduled fire after its last success, registration, resume or schedule change, as /health judges it; alert on time() > this. job="(other)": the earliest of the jobs beyond the node\'s job limit.',
    labelNames: ['job'],
    registers,
    async collect() {
      this.reset();
      // The jobs beyond the limit show the earliest of their deadlines: the alert on it fires with the first overdue.
      let earliest = Infinity;
      const list = deadlines ? await deadlines() : [];
      const labelOf = labels.borrow();
      for (const d of list) {
        if (d.dueBy === null) continue;
        const job = labelOf(d.jobId);
        if (job === OTHER_JOBS) earliest = Math.min(earliest, d.dueBy);
        else this.set({ job }, d.dueBy / 1000);
      }
      if (earliest !== Infinity) this.set({ job: OTHER_JOBS }, earliest / 1000);
      forgetAfterScrape(this);
    },
  });
  const invalid = new Gauge({
    name: 'leasehold_job_invalid_schedule',
    help: '1 while the job\'s schedule (as declared or overridden in the settings hash) is invalid, else 0, by job (job="(other)": 1 while one of the jobs beyond the node\'s job limit has an invalid schedule).',
    labelNames: ['job'],
    registers,
    collect() {
      if (labels.anyFolded) this.set({ job: OTHER_JOBS }, otherInvalid.size > 0 ? 1 : 0);
    },
  });


  // Zero-valued counters, so that rates work from the first scrape.
  const zeroCounters = (job: string, installation: boolean): void => {
    for (const outcome of Object.values(RunOutcomes)) runs.inc({ job, outcome }, 0);
    for (const reason of Object.values(SkipReasons)) {
      if (reason !== 'claimed' || installation) skips.inc({ job, reason }, 0);
    }
    if (installation) {
      missed.inc({ job }, 0);
      leaseLost.inc({ job }, 0);
    }
  };
  const addJob = (jobId: string, scope: 'instance' | 'installation'): void => {
    if (labels.hasOwn(jobId) || labels.of(jobId) === OTHER_JOBS) return;
    updateInterval(jobId);
    zeroCounters(jobId, scope === 'installation');
    streak.set({ job: jobId }, 0);
    lastSuccess.set({ job: jobId }, 0);
    invalid.set({ job: jobId }, 0);
  };
  const updateInterval = (jobId: string): void => {
    const ms = core.intervalOf(jobId);
    if (ms !== undefined && labels.hasOwn(jobId)) intervals.set(jobId, ms);
  };
  const removeJob = (jobId: string): void => {
    otherStreaks.delete(jobId);
    otherInvalid.delete(jobId);
    if (!labels.forget(jobId)) return;
    intervals.delete(jobId);
    for (const outcome of Object.values(RunOutcomes)) {
      runs.remove({ job: jobId, outcome });
      durations.remove({ job: jobId, outcome });
    }
    for (const reason of Object.values(SkipReasons)) skips.remove({ job: jobId, reason });
    for (const metric of [missed, lag, leaseLost, streak, lastSuccess, invalid]) metric.remove({ job: jobId });
  };
  for (const v of core.jobs()) addJob(v.job.id, v.job.scope);
  // A run of a job removed while it ran ends after the job's series went: it counts in (other),
  // and takes no place back (series made again now would outlive the job).
  // A job with series of its own is live here: removeJob takes them back.
  const live = (jobId: string): boolean => labels.hasOwn(jobId) || core.has(jobId);
  const labelOf = (jobId: string): string => (live(jobId) ? labels.of(jobId) : labels.fold());

  const offs = [
    core.on('runStarted', (e) => {
      if (!e.manual && e.attempt === 1) lag.observe({ job: labelOf(e.jobId) }, Math.max(0, e.lagMs) / 1000);
    }),
    core.on('runEnded', (e) => {
      if (e.willRetry) return; // a tick counts once, by its final attempt
      const isLive = live(e.jobId);
      const job = isLive ? labels.of(e.jobId) : labels.fold();
      runs.inc({ job, outcome: e.outcome });
      // A lost run's duration is not known (only when it was found): it is not observed.
      if (e.outcome !== 'lost') durations.observe({ job, outcome: e.outcome }, Math.max(0, e.durationMs) / 1000);
      if (e.outcome === 'lockLost') leaseLost.inc({ job });
      if (!isLive) return; // a job gone keeps no streak
      if (job === OTHER_JOBS) {
        if (e.outcome === 'succeeded') otherStreaks.delete(e.jobId);
        else if (countsInStreak(e.outcome)) otherStreaks.set(e.jobId, (otherStreaks.get(e.jobId) ?? 0) + 1);
      } else if (e.outcome === 'succeeded') {
        streak.set({ job }, 0);
        lastSuccess.set({ job }, e.endedAt / 1000);
      } else if (countsInStreak(e.outcome)) {
        streak.inc({ job });
      }
    }),
    core.on('jobRemoved', (e) => removeJob(e.jobId)),
    core.on('scheduled', (e) => updateInterval(e.jobId)),
    core.on('jobState', (e) => {
      if (!live(e.jobId)) return;
      const job = labels.of(e.jobId);
      const bad = e.state === 'invalidSchedule';
      if (job !== OTHER_JOBS) invalid.set({ job }, bad ? 1 : 0);
      else if (bad) otherInvalid.add(e.jobId);
      else otherInvalid.delete(e.jobId);
    }),
    core.on('skipped', (e) => skips.inc({ job: labelOf(e.jobId), reason: e.reason })),
    core.on('missed', (e) => missed.inc({ job: labelOf(e.jobId) }, e.count)),
  ];
  return { addJob, detach: () => offs.forEach((off) => off()) };
}
