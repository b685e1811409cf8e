/**
 * Prometheus metrics of one runner (this node's view), as a listener of its events, in a
 * registry of its own (never prom-client's global one). The default process metrics are
 * collected once per process, in a registry shared by every runner's: they describe the
 * process, and collecting them twice would start a second event-loop monitor.
 * @module
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { processMetrics } from './process.js';
import { countedTotals } from './totals.js';
import type { Scheduler } from '../runner/runner.js';
import { RunOutcomes, SkipReasons } from '../runner/events.js';
import { unhandledCounter, type UnhandledFigures } from './unhandled.js';
import { checkJobLimit, DEFAULT_JOB_LIMIT, JobLabels, OTHER_JOBS } from './job-series.js';

/** Buckets of run durations, in seconds: from 10 ms to an hour. */
export const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600];
/** Buckets of start lag (actual start minus scheduled tick), in seconds. */
export const LAG_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Every metric name this module exports (besides the default process metrics). */
export const METRIC_NAMES = [
  'leasehold_job_runs_total',
  'leasehold_job_run_duration_seconds',
  'leasehold_job_skips_total',
  'leasehold_job_missed_total',
  'leasehold_job_start_lag_seconds',
  'leasehold_lease_lost_total',
  'leasehold_job_failing_streak',
  'leasehold_job_last_success_timestamp_seconds',
  'leasehold_job_interval_seconds',
  'leasehold_job_invalid_schedule',
  'leasehold_job_success_deadline_timestamp_seconds',
  'leasehold_clock_steps_total',
  'leasehold_task_queue_depth',
  'leasehold_tasks_active',
  'leasehold_tasks_total',
  'leasehold_task_duration_seconds',
  'leasehold_events_clients',
  'leasehold_events_clients_dropped_total',
  'leasehold_unhandled_errors_total',
] as const;

/** An executor's gauges at a scrape (see {@link RunnerMetricsOptions.executorFigures}). */
export interface ExecutorGauges {
  readonly executor: string;
  /** Tasks waiting: on this node for `loop` and `worker`, in the queue (cluster-wide) for `queue`. */
  readonly queued: number;
  /** Tasks running: on this node, or in the whole cluster for `queue`. */
  readonly active: number;
}

/** A job's success deadline, as the cluster's status judges it (see {@link RunnerMetricsOptions.successDeadlines}). */
export interface SuccessDeadline {
  readonly jobId: string;
  /** Epoch ms by which a success is due; null when none is (no schedule known, paused, orphaned). */
  readonly dueBy: number | null;
}

/** The status page's event streams on this node (see {@link RunnerMetricsOptions.eventStreams}). */
export interface EventStreamGauges {
  /** Streams open now. */
  readonly clients: number;
  /** Clients refused so far because the node served its cap of streams. */
  readonly refused: number;
  /** Clients disconnected so far because they did not read. */
  readonly dropped: number;
}

/** A runner's metrics. */
export interface RunnerMetrics {
  /** The registry to scrape: this runner's metrics and the process metrics. */
  readonly registry: Registry;
  /** Creates the series of a job with zero values, so rates work from the first scrape. */
  addJob(jobId: string, scope: 'instance' | 'installation'): void;
  /** Drops the series of a job removed from the node, and frees its place under the job limit. */
  removeJob(jobId: string): void;
  /** Stops listening to the runner. */
  detach(): void;
}

/**
 * Options of {@link createRunnerMetrics}: what the gauges read at each scrape. A source answers
 * what it could read (an empty list when it could not, telling why where it can): one that
 * rejects fails the scrape.
 */
export interface RunnerMetricsOptions {
  /** Whether the registry also serves prom-client's process metrics. Default true. */
  readonly processMetrics?: boolean;
  /**
   * How many jobs have series of their own (`job="<id>"`), the first the node hears of; the
   * runs of the others are counted in one set of series, `job="(other)"`. Default 1,000.
   */
  readonly jobLimit?: number;
  /**
   * The success deadlines (the cluster's status, which judges `/health` by the same rule);
   * without a source the gauge has no series.
   */
  readonly successDeadlines?: () => Promise<readonly SuccessDeadline[]>;
  /** The executors' queue depth and active tasks. */
  readonly executorFigures?: () => Promise<readonly ExecutorGauges[]>;
  /** The figures of the status page's event streams. */
  readonly eventStreams?: () => EventStreamGauges;
  /** The rejections and exceptions nobody handled that the runner reported. */
  readonly unhandled?: () => UnhandledFigures;
  /** Failed token attempts of the HTTP routes so far, by route. */
  readonly authFailures?: () => ReadonlyMap<string, number>;
  /** Stats batches dropped so far, by job (totals kept by the stats writer). */
  readonly statsBatchesDropped?: () => ReadonlyMap<string, number>;
}

/** What the metrics need of a runner. */
export type MetricsCore = Pick<Scheduler, 'on' | 'jobs' | 'job' | 'intervalOf'>;

/**
 * Drops a gauge's series once the scrape that made them has read them: a gauge remade from its
 * source at every scrape would otherwise hold a series per job between scrapes (its labels,
 * label hash and entry: about 40 MB for 100,000 jobs and two such gauges). prom-client reads
 * the series right after `collect` returns, before anything scheduled with `setImmediate`.
 */
function forgetAfterScrape(gauge: { reset(): void }): void {
  setImmediate(() => gauge.reset());
}

/** Creates a runner's metrics and subscribes them to its events. */
export function createRunnerMetrics(core: MetricsCore, opts: RunnerMetricsOptions = {}): RunnerMetrics {
  const labels = new JobLabels(checkJobLimit(opts.jobLimit ?? DEFAULT_JOB_LIMIT));
  // What the gauges of the folded jobs show: the longest failing streak among them, and whether one is invalid.
  const otherStreaks = new Map<string, number>();
  const otherInvalid = new Set<string>();
  const own = new Registry();
  const registers = [own];
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
      for (const d of deadlines ? await deadlines() : []) {
        if (d.dueBy === null) continue;
        const job = labelOf(d.jobId);
        if (job === OTHER_JOBS) earliest = Math.min(earliest, d.dueBy);
        else this.set({ job }, d.dueBy / 1000);
      }
      if (earliest !== Infinity) this.set({ job: OTHER_JOBS }, earliest / 1000);
      forgetAfterScrape(this);
    },
  });
  const clockSteps = new Counter({ name: 'leasehold_clock_steps_total', help: 'Steps of this node\'s wall clock (against its monotonic clock) of more than a second.', registers });
  const invalid = new Gauge({
    name: 'leasehold_job_invalid_schedule',
    help: '1 while the job\'s schedule (as declared or overridden in the settings hash) is invalid, else 0, by job (job="(other)": 1 while one of the jobs beyond the node\'s job limit has an invalid schedule).',
    labelNames: ['job'],
    registers,
    collect() {
      if (labels.anyFolded) this.set({ job: OTHER_JOBS }, otherInvalid.size > 0 ? 1 : 0);
    },
  });

  const executors = opts.executorFigures;
  // One read of the figures serves both gauges of a scrape.
  let figures: Promise<readonly ExecutorGauges[]> | undefined;
  const readFigures = (): Promise<readonly ExecutorGauges[]> => {
    figures ??= (executors ? executors() : Promise.resolve([])).finally(() => setImmediate(() => (figures = undefined)));
    return figures;
  };
  new Gauge({
    name: 'leasehold_task_queue_depth',
    help: 'Background tasks waiting, by executor: on this node for loop and worker executors, in the queue (cluster-wide) for queue executors.',
    labelNames: ['executor'],
    registers,
    async collect() {
      this.reset();
      for (const e of await readFigures()) this.set({ executor: e.executor }, e.queued);
    },
  });
  new Gauge({
    name: 'leasehold_tasks_active',
    help: 'Background tasks running, by executor: on this node for loop and worker executors, cluster-wide for queue executors.',
    labelNames: ['executor'],
    registers,
    async collect() {
      this.reset();
      for (const e of await readFigures()) this.set({ executor: e.executor }, e.active);
    },
  });
  // Tasks come by the thousand a second: each series' children are looked up once, not hashed
  // by prom-client on every event, and the count is added when read (one `inc` per series and
  // scrape instead of one per task); prom-client has no such batch for a histogram's values.
  const taskSeries = new Map<string, { count: { inc(n: number): void }; ended: number; duration: { observe(v: number): void } }>();
  const tasks = new Counter({
    name: 'leasehold_tasks_total',
    help: 'Background task attempts that ended on this node, by executor, task and outcome.',
    labelNames: ['executor', 'task', 'outcome'],
    registers,
    collect() {
      for (const series of taskSeries.values()) {
        if (series.ended > 0) series.count.inc(series.ended);
        series.ended = 0;
      }
    },
  });
  const taskDurations = new Histogram({ name: 'leasehold_task_duration_seconds', help: 'Duration of background task attempts on this node, by executor, task and outcome.', labelNames: ['executor', 'task', 'outcome'], buckets: [...DURATION_BUCKETS], registers });

  const streams = opts.eventStreams;
  new Gauge({
    name: 'leasehold_events_clients',
    help: 'Status-page event streams (GET /manage/events) open on this node.',
    registers,
    collect() {
      this.set(streams?.().clients ?? 0);
    },
  });
  countedTotals(registers, 'leasehold_events_clients_dropped_total', 'Status-page event-stream clients this node refused or dropped, by reason: maxClients (answered 503, the node served its cap) or slow (disconnected, it did not read).', 'reason', () => {
    const f = streams?.() ?? { refused: 0, dropped: 0 };
    return new Map([['maxClients', f.refused], ['slow', f.dropped]]);
  });
  unhandledCounter(registers, opts.unhandled);
  countedTotals(registers, 'leasehold_auth_failures_total', 'Failed token attempts on this node\'s HTTP routes (a wrong admin, read or metrics token, or a wrong token at the sign-in), by route.', 'route', opts.authFailures);

  countedTotals(registers, 'leasehold_stats_batches_dropped_total', 'Stats batches this node dropped, by job: Redis refused each at every try (a key of the job of the wrong type), so its runs are not counted in Redis.', 'job', opts.statsBatchesDropped);

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
  const labelOf = (jobId: string): string => {
    const folded = labels.anyFolded;
    const job = labels.of(jobId);
    if (!folded && labels.anyFolded) zeroCounters(OTHER_JOBS, true);
    return job;
  };
  const addJob = (jobId: string, scope: 'instance' | 'installation'): void => {
    if (labels.hasOwn(jobId) || labelOf(jobId) === OTHER_JOBS) return;
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
    const job = jobId;
    for (const outcome of Object.values(RunOutcomes)) {
      runs.remove({ job, outcome });
      durations.remove({ job, outcome });
    }
    for (const reason of Object.values(SkipReasons)) skips.remove({ job, reason });
    for (const metric of [missed, lag, leaseLost, streak, lastSuccess, invalid]) metric.remove({ job });
  };
  const isFailure = (outcome: string): boolean => outcome !== 'succeeded' && outcome !== 'interrupted' && outcome !== 'cancelled';
  for (const v of core.jobs()) addJob(v.job.id, v.job.scope);

  const offs = [
    core.on('runStarted', (e) => {
      if (!e.manual && e.attempt === 1) lag.observe({ job: labelOf(e.jobId) }, Math.max(0, e.lagMs) / 1000);
    }),
    core.on('runEnded', (e) => {
      if (e.willRetry) return; // a tick counts once, by its final attempt
      const job = labelOf(e.jobId);
      runs.inc({ job, outcome: e.outcome });
      // A lost run's duration is not known (only when it was found): it is not observed.
      if (e.outcome !== 'lost') durations.observe({ job, outcome: e.outcome }, Math.max(0, e.durationMs) / 1000);
      if (e.outcome === 'lockLost') leaseLost.inc({ job });
      if (job === OTHER_JOBS) {
        if (e.outcome === 'succeeded') otherStreaks.delete(e.jobId);
        else if (isFailure(e.outcome)) otherStreaks.set(e.jobId, (otherStreaks.get(e.jobId) ?? 0) + 1);
      } else if (e.outcome === 'succeeded') {
        streak.set({ job }, 0);
        lastSuccess.set({ job }, e.endedAt / 1000);
      } else if (isFailure(e.outcome)) {
        streak.inc({ job });
      }
    }),
    core.on('scheduled', (e) => updateInterval(e.jobId)),
    core.on('jobState', (e) => {
      const job = labelOf(e.jobId);
      const bad = e.state === 'invalidSchedule';
      if (job !== OTHER_JOBS) invalid.set({ job }, bad ? 1 : 0);
      else if (bad) otherInvalid.add(e.jobId);
      else otherInvalid.delete(e.jobId);
    }),
    core.on('skipped', (e) => skips.inc({ job: labelOf(e.jobId), reason: e.reason })),
    core.on('missed', (e) => missed.inc({ job: labelOf(e.jobId) }, e.count)),
    core.on('clockStep', () => clockSteps.inc()),
    core.on('taskEnded', (e) => {
      const key = `${e.executor}\u0000${e.task}\u0000${e.outcome}`;
      let series = taskSeries.get(key);
      if (!series) {
        series = { count: tasks.labels(e.executor, e.task, e.outcome), ended: 0, duration: taskDurations.labels(e.executor, e.task, e.outcome) };
        taskSeries.set(key, series);
      }
      series.ended++;
      series.duration.observe(Math.max(0, e.durationMs) / 1000);
    }),
  ];
  const registry = opts.processMetrics === false ? own : Registry.merge([own, processMetrics()]);
  return {
    registry,
    addJob,
    removeJob,
    detach: () => offs.forEach((off) => off()),
  };
}
