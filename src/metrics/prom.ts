/**
 * Prometheus metrics of one runner (this node's view), as a listener of its events, in a
 * registry of its own (never prom-client's global one). The default process metrics are
 * collected once per process, in a registry shared by every runner's: they describe the
 * process, and collecting them twice would start a second event-loop monitor.
 * @module
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { jobMetrics, type MetricsCore, type SuccessDeadline } from './job-metrics.js';
import { processMetrics } from './process.js';
import { taskMetrics, type ExecutorGauges } from './task-metrics.js';
import { countedTotals } from './totals.js';
import { unhandledCounter, type UnhandledFigures } from './unhandled.js';

export { DURATION_BUCKETS, LAG_BUCKETS, type MetricsCore, type SuccessDeadline } from './job-metrics.js';
export type { ExecutorGauges } from './task-metrics.js';

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
  /**
   * Creates the series of a job with zero values, so rates work from the first scrape. A job
   * removed from the node gives its series and its place back on the runner's `jobRemoved`.
   */
  addJob(jobId: string, scope: 'instance' | 'installation'): void;
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

/** Creates a runner's metrics and subscribes them to its events. */
export function createRunnerMetrics(core: MetricsCore, opts: RunnerMetricsOptions = {}): RunnerMetrics {
  const own = new Registry();
  const registers = [own];
  const clockSteps = new Counter({ name: 'leasehold_clock_steps_total', help: 'Steps of this node\'s wall clock (against its monotonic clock) of more than a second.', registers });
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

  const jobs = jobMetrics(core, registers, { jobLimit: opts.jobLimit, successDeadlines: opts.successDeadlines });
  const offs = [jobs.detach, taskMetrics(core, registers, opts.executorFigures), core.on('clockStep', () => clockSteps.inc())];
  const registry = opts.processMetrics === false ? own : Registry.merge([own, processMetrics()]);
  return {
    registry,
    addJob: jobs.addJob,
    detach: () => offs.forEach((off) => off()),
  };
}
