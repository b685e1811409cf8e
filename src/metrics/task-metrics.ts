/**
 * The series of background tasks: the executors' queue depth and active tasks, read at a
 * scrape, and each task's attempts and their durations, by executor, task and outcome.
 * @module
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { DURATION_BUCKETS, type MetricsCore } from './job-metrics.js';

/** An executor's gauges at a scrape (see {@link RunnerMetricsOptions.executorFigures}). */
export interface ExecutorGauges {
  readonly executor: string;
  /** Tasks waiting: on this node for `loop` and `worker`, in the queue (cluster-wide) for `queue`. */
  readonly queued: number;
  /** Tasks running: on this node, or in the whole cluster for `queue`. */
  readonly active: number;
}

/** Creates the task series in `registers` and subscribes them to the runner's events; answers the unsubscribe. */
export function taskMetrics(core: Pick<MetricsCore, 'on'>, registers: Registry[], executors: (() => Promise<readonly ExecutorGauges[]>) | undefined): () => void {
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

  return core.on('taskEnded', (e) => {
    const key = `${e.executor}\u0000${e.task}\u0000${e.outcome}`;
    let series = taskSeries.get(key);
    if (!series) {
      series = { count: tasks.labels(e.executor, e.task, e.outcome), ended: 0, duration: taskDurations.labels(e.executor, e.task, e.outcome) };
      taskSeries.set(key, series);
    }
    series.ended++;
    series.duration.observe(Math.max(0, e.durationMs) / 1000);
  });
}
