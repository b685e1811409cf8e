/**
 * Prometheus metrics of one runner (this node's view), as a listener of its events, in a
 * registry of its own (never prom-client's global one). The default process metrics are
 * collected once per process, in a registry shared by every runner's: they describe the
 * process, and collecting them twice would start a second event-loop monitor.
 * @module
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RunnerCore } from '../runner/runner.js';
import { RunOutcomes, SkipReasons } from '../runner/events.js';

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
] as const;

/**
 * How often the event-loop lag of the default process metrics is sampled, in ms. prom-client's
 * default of 10 ms wakes the process a hundred times a second, which costs an idle node more
 * CPU than its jobs do; a blocked loop still shows in full at 100 ms.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

let processRegistry: Registry | undefined;

/** The process-wide registry of prom-client's default metrics, created on first use. */
function defaultMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }
  return processRegistry;
}

/** A runner's metrics. */
export interface RunnerMetrics {
  /** The registry to scrape: this runner's metrics and the process metrics. */
  readonly registry: Registry;
  /** Creates the series of a job with zero values, so rates work from the first scrape. */
  addJob(jobId: string, scope: 'instance' | 'installation'): void;
  /** Stops listening to the runner. */
  detach(): void;
}

/** What the metrics need of a runner. */
export type MetricsCore = Pick<RunnerCore, 'on' | 'jobs' | 'job' | 'intervalOf'>;

/**
 * Zero-valued series are created up front for at most this many jobs: they let rates work
 * from the first scrape, but each job adds about twenty lines to every scrape, which matters
 * to a node with thousands of jobs. Beyond it, a job's series appear with its first event.
 */
export const ZERO_SERIES_JOB_LIMIT = 1_000;

/** The labels of one series: `job`, and the metric's second label when it has one. */
type SeriesLabels = Record<string, string>;

/**
 * The series of one metric, found by job id and, for a metric with a second label (outcome,
 * reason), by that label's value; kept in the order they were first made.
 */
class SeriesMap<S> {
  private readonly byJob = new Map<string, Map<string, S>>();

  constructor(
    private readonly second: string | undefined,
    private readonly make: (labels: SeriesLabels) => S,
  ) {}

  get(job: string, value = ''): S {
    let forJob = this.byJob.get(job);
    if (forJob === undefined) {
      forJob = new Map();
      this.byJob.set(job, forJob);
    }
    let series = forJob.get(value);
    if (series === undefined) {
      series = this.make(this.second === undefined ? { job } : { job, [this.second]: value });
      forJob.set(value, series);
    }
    return series;
  }

  *all(): IterableIterator<S> {
    for (const forJob of this.byJob.values()) yield* forJob.values();
  }

  clear(): void {
    this.byJob.clear();
  }
}

/** A counter's or gauge's series. */
interface ValueSeries {
  readonly labels: SeriesLabels;
  value: number;
}

/**
 * Empties a metric's series on `reset()`. prom-client's constructor calls `reset()` before the
 * subclass has set its fields, so the series may not exist yet.
 */
function clearSeries(series: SeriesMap<unknown> | undefined): void {
  series?.clear();
}

function labelNames(second: string | undefined): string[] {
  return second === undefined ? ['job'] : ['job', second];
}

/**
 * A counter whose series the listeners update in place. prom-client's own `inc` hashes the
 * label object on every call, and a node with a thousand jobs due at one tick makes thousands
 * of such calls per tick; here a series is found by job id (and second label), and prom-client
 * still names, formats and serves it.
 */
class JobCounter extends Counter<string> {
  private readonly series: SeriesMap<ValueSeries>;

  constructor(name: string, help: string, second: string | undefined, registers: Registry[]) {
    super({ name, help, labelNames: labelNames(second), registers });
    this.series = new SeriesMap(second, (labels) => ({ labels, value: 0 }));
  }

  /** Adds `n` (>= 0; 0 creates the series) to the series of `job` (and `value` of the second label). */
  add(job: string, value: string | undefined, n = 1): void {
    this.series.get(job, value).value += n;
  }

  override async get(): ReturnType<Counter<string>['get']> {
    return { ...(await super.get()), values: [...this.series.all()] };
  }

  override reset(): void {
    super.reset();
    clearSeries(this.series);
  }
}

/** A gauge whose series the listeners set in place; see {@link JobCounter}. */
class JobGauge extends Gauge<string> {
  private readonly series: SeriesMap<ValueSeries>;

  constructor(name: string, help: string, registers: Registry[]) {
    super({ name, help, labelNames: ['job'], registers });
    this.series = new SeriesMap(undefined, (labels) => ({ labels, value: 0 }));
  }

  put(job: string, value: number): void {
    this.series.get(job).value = value;
  }

  add(job: string, n: number): void {
    this.series.get(job).value += n;
  }

  override async get(): ReturnType<Gauge<string>['get']> {
    return { ...(await super.get()), values: [...this.series.all()] };
  }

  override reset(): void {
    super.reset();
    clearSeries(this.series);
  }
}

/** A histogram's series: observations per bucket (not cumulative; the last is +Inf), sum, count. */
interface HistogramSeries {
  readonly labels: SeriesLabels;
  readonly counts: number[];
  sum: number;
  count: number;
}

/** One value of a histogram as prom-client's registry formats it. */
interface HistogramValue {
  labels: Record<string, string | number>;
  sharedLabels: SeriesLabels;
  value: number;
  metricName: string;
  /** prom-client's buckets carry an exemplar slot (null without exemplars). */
  exemplar?: null;
}

/** A histogram whose series the listeners update in place; see {@link JobCounter}. */
class JobHistogram extends Histogram<string> {
  private readonly series: SeriesMap<HistogramSeries>;

  constructor(
    private readonly metricName: string,
    private readonly metricHelp: string,
    second: string | undefined,
    private readonly bounds: readonly number[],
    registers: Registry[],
  ) {
    super({ name: metricName, help: metricHelp, labelNames: labelNames(second), buckets: [...bounds], registers });
    this.series = new SeriesMap(second, (labels) => ({ labels, counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 }));
  }

  record(job: string, value: string | undefined, observed: number): void {
    const s = this.series.get(job, value);
    let i = 0;
    while (i < this.bounds.length && observed > (this.bounds[i] as number)) i++;
    s.counts[i] = (s.counts[i] as number) + 1;
    s.sum += observed;
    s.count += 1;
  }

  /**
   * What prom-client's registry renders a histogram from (its `get()` builds on it too): per
   * series the cumulative buckets with their `le`, then `+Inf`, the sum and the count.
   */
  async getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: 'sum'; values: HistogramValue[] }> {
    const bucket = `${this.metricName}_bucket`;
    const values: HistogramValue[] = [];
    for (const s of this.series.all()) {
      let total = 0;
      this.bounds.forEach((le, i) => {
        total += s.counts[i] as number;
        values.push({ labels: { le }, sharedLabels: s.labels, value: total, metricName: bucket, exemplar: null });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket, exemplar: null },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.metricName}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.metricName}_count` },
      );
    }
    return { name: this.metricName, help: this.metricHelp, type: 'histogram', aggregator: 'sum', values };
  }

  override reset(): void {
    super.reset();
    clearSeries(this.series);
  }
}

/** Creates a runner's metrics and subscribes them to its events. */
export function createRunnerMetrics(core: MetricsCore, opts: { processMetrics?: boolean } = {}): RunnerMetrics {
  const own = new Registry();
  const registers = [own];
  const runs = new JobCounter('leasehold_job_runs_total', 'Runs that ended, by job and outcome.', 'outcome', registers);
  const durations = new JobHistogram('leasehold_job_run_duration_seconds', 'Duration of runs, by job and outcome.', 'outcome', DURATION_BUCKETS, registers);
  const skips = new JobCounter('leasehold_job_skips_total', 'Starts that did not happen, by job and reason (overrun, claimed, paused).', 'reason', registers);
  const missed = new JobCounter('leasehold_job_missed_total', 'Ticks no instance ran, counted by the node that claimed the next tick.', undefined, registers);
  const lag = new JobHistogram('leasehold_job_start_lag_seconds', 'Actual start minus scheduled tick of scheduled runs, by job.', undefined, LAG_BUCKETS, registers);
  const leaseLost = new JobCounter('leasehold_lease_lost_total', 'Runs aborted because their lease was lost, by job.', undefined, registers);
  const streak = new JobGauge('leasehold_job_failing_streak', 'Unsuccessful runs (failed, timedOut, lockLost) in a row on this node since its last success, by job.', registers);
  const lastSuccess = new JobGauge('leasehold_job_last_success_timestamp_seconds', 'End of the last successful run on this node (epoch seconds; 0 before the first), by job.', registers);
  const interval = new JobGauge('leasehold_job_interval_seconds', 'Nominal interval of the job\'s schedule as it applies now, by job.', registers);
  const invalid = new JobGauge('leasehold_job_invalid_schedule', '1 while the job\'s schedule (as declared or overridden in the settings hash) is invalid, else 0, by job.', registers);

  const known = new Set<string>();
  const addJob = (jobId: string, scope: 'instance' | 'installation'): void => {
    if (known.has(jobId)) return;
    known.add(jobId);
    updateInterval(jobId);
    if (known.size > ZERO_SERIES_JOB_LIMIT) return;
    for (const outcome of Object.values(RunOutcomes)) runs.add(jobId, outcome, 0);
    for (const reason of Object.values(SkipReasons)) {
      if (reason !== 'claimed' || scope === 'installation') skips.add(jobId, reason, 0);
    }
    if (scope === 'installation') {
      missed.add(jobId, undefined, 0);
      leaseLost.add(jobId, undefined, 0);
    }
    streak.put(jobId, 0);
    lastSuccess.put(jobId, 0);
    invalid.put(jobId, 0);
  };
  const intervals = new Map<string, number>();
  const updateInterval = (jobId: string): void => {
    const ms = core.intervalOf(jobId);
    if (ms === undefined || intervals.get(jobId) === ms) return;
    intervals.set(jobId, ms);
    interval.put(jobId, ms / 1000);
  };
  for (const v of core.jobs()) addJob(v.job.id, v.job.scope);

  const offs = [
    core.on('runStarted', (e) => {
      if (!e.manual && e.attempt === 1) lag.record(e.jobId, undefined, Math.max(0, e.lagMs) / 1000);
    }),
    core.on('runEnded', (e) => {
      if (e.willRetry) return; // a tick counts once, by its final attempt
      runs.add(e.jobId, e.outcome);
      durations.record(e.jobId, e.outcome, Math.max(0, e.durationMs) / 1000);
      if (e.outcome === 'lockLost') leaseLost.add(e.jobId, undefined);
      if (e.outcome === 'succeeded') {
        streak.put(e.jobId, 0);
        lastSuccess.put(e.jobId, e.endedAt / 1000);
      } else if (e.outcome !== 'interrupted' && e.outcome !== 'cancelled') {
        streak.add(e.jobId, 1);
      }
    }),
    core.on('scheduled', (e) => updateInterval(e.jobId)),
    core.on('jobState', (e) => invalid.put(e.jobId, e.state === 'invalidSchedule' ? 1 : 0)),
    core.on('skipped', (e) => skips.add(e.jobId, e.reason)),
    core.on('missed', (e) => missed.add(e.jobId, undefined, e.count)),
  ];
  const registry = opts.processMetrics === false ? own : Registry.merge([own, defaultMetrics()]);
  return {
    registry,
    addJob,
    detach: () => offs.forEach((off) => off()),
  };
}
