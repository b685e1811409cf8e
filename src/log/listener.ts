/**
 * Logs run outcomes: for a job that keeps failing, the first failure (warn) and the
 * recovery (info), not every repeat. An instance job's streak is this node's; an installation
 * job's ticks move between nodes, so with Redis its streak is the installation's: the node whose
 * stats write starts or ends it logs the line ({@link logStreakChange}), once for all nodes.
 * @module
 */
import type { RunEndedEvent } from '../runner/events.js';
import type { Logger } from '../logger.js';
import { formatDuration } from '../schedule/duration.js';
import type { Scheduler } from '../runner/runner.js';

/** Options of {@link attachLogListener}. */
export interface LogListenerOptions {
  /** Fields to add to the lines about a run in progress (the tracer's `trace_id` and `span_id`). */
  readonly runFields?: (runId: string) => Readonly<Record<string, string>> | undefined;
  /**
   * True when installation jobs' first failures and recoveries are logged from the cluster's
   * streak ({@link logStreakChange}, told by the stats writer), not from this node's runs.
   */
  readonly clusterStreaks?: boolean;
  /** Where an installation run's trace fields are kept for its line from the cluster's streak. */
  readonly streakFields?: RunFieldsMemo;
}

/**
 * The trace fields of recent installation runs, kept from their end until the installation's
 * streak (told after the run's record) says whether a line is logged about them: by then the
 * run's span has ended. The oldest go first, past `max`.
 */
export class RunFieldsMemo {
  private readonly byRun = new Map<string, Readonly<Record<string, string>>>();

  constructor(private readonly max = 1_024) {}

  keep(runId: string, fields: Readonly<Record<string, string>> | undefined): void {
    if (fields === undefined) return;
    this.byRun.set(runId, fields);
    if (this.byRun.size > this.max) this.byRun.delete(this.byRun.keys().next().value as string);
  }

  /** The run's fields, once. */
  take(runId: string): Readonly<Record<string, string>> | undefined {
    const fields = this.byRun.get(runId);
    this.byRun.delete(runId);
    return fields;
  }
}

/** The start or the end of an installation job's failing streak, as the stats writer tells it. */
export type StreakLogChange =
  | { readonly kind: 'failed'; readonly run: RunEndedEvent }
  | { readonly kind: 'recovered'; readonly run: RunEndedEvent; readonly failedRuns: number };

/** The first failure (warn) of a job's streak. */
function logFailed(log: Logger, e: RunEndedEvent, fields: Record<string, unknown>): void {
  const err = e.cause instanceof Error ? e.cause : undefined;
  log.warn({ ...fields, err, error: e.error }, 'job "%s" %s: %s', e.jobId, e.outcome, e.error ?? 'no error message');
}

/** "run" or "runs", as `n` asks. */
function runs(n: number): string {
  return n === 1 ? 'run' : 'runs';
}

/** The recovery (info) of a job after `streak` unsuccessful runs. */
function logRecovered(log: Logger, e: RunEndedEvent, fields: Record<string, unknown>, streak: number): void {
  log.info({ ...fields, failedRuns: streak }, 'job "%s" recovered after %d unsuccessful %s', e.jobId, streak, runs(streak));
}

/** Logs the start (warn) or the end (info) of an installation job's failing streak, cluster-wide, with the run's trace fields if kept. */
export function logStreakChange(log: Logger, change: StreakLogChange, traced?: RunFieldsMemo): void {
  const e = change.run;
  const fields = { jobId: e.jobId, runId: e.runId, outcome: e.outcome, durationMs: e.durationMs, instanceId: e.instanceId, ...traced?.take(e.runId) };
  if (change.kind === 'failed') logFailed(log, e, fields);
  else logRecovered(log, e, fields, change.failedRuns);
}

/** Subscribes a logger to a runner's events. Returns an unsubscribe function. */
export function attachLogListener(runner: Pick<Scheduler, 'on'>, log: Logger, opts: LogListenerOptions = {}): () => void {
  const failing = new Map<string, number>();
  const traced = (runId: string): Readonly<Record<string, string>> | undefined => opts.runFields?.(runId);
  const failingTasks = new Map<string, number>();
  // Debug lines are built only when they are written: most nodes run at info, many jobs.
  const debug = (): boolean => log.isLevelEnabled('debug');
  const offs = [
    runner.on('runStarted', (e) => {
      if (debug()) log.debug({ jobId: e.jobId, runId: e.runId, scheduledAt: new Date(e.scheduledAt).toISOString(), lagMs: e.lagMs, fencingToken: e.fencingToken, ...traced(e.runId) }, 'run started');
    }),
    runner.on('runEnded', (e) => {
      if (e.willRetry) {
        log.info({ jobId: e.jobId, runId: e.runId, attempt: e.attempt, error: e.error, ...traced(e.runId) }, 'job "%s": attempt %d failed (%s); retrying', e.jobId, e.attempt, e.error ?? 'no error message');
        return;
      }
      // A lost lease (lockLost) and a lost run are this node's to say: their records reach the
      // cluster's streak apart from the batch's (one record per fencing token).
      if (opts.clusterStreaks && e.scope === 'installation' && e.outcome !== 'interrupted' && e.outcome !== 'cancelled' && e.outcome !== 'lost' && e.outcome !== 'lockLost') {
        // The installation's streak decides, once for all nodes (logStreakChange), after the span ended.
        opts.streakFields?.keep(e.runId, traced(e.runId));
        if (debug()) log.debug({ jobId: e.jobId, runId: e.runId, outcome: e.outcome, durationMs: e.durationMs, error: e.error, ...traced(e.runId) }, e.outcome === 'succeeded' ? 'run succeeded' : 'run unsuccessful');
        return;
      }
      if (e.outcome === 'succeeded' && !failing.has(e.jobId)) {
        if (debug()) log.debug({ jobId: e.jobId, runId: e.runId, outcome: e.outcome, durationMs: e.durationMs, ...traced(e.runId) }, 'run succeeded');
        return;
      }
      const fields = { jobId: e.jobId, runId: e.runId, outcome: e.outcome, durationMs: e.durationMs, ...traced(e.runId) };
      if (e.outcome === 'succeeded') {
        const streak = failing.get(e.jobId) ?? 0;
        failing.delete(e.jobId);
        logRecovered(log, e, fields, streak);
        return;
      }
      if (e.outcome === 'interrupted' || e.outcome === 'cancelled') {
        log.info({ ...fields, error: e.error }, 'run of "%s" %s', e.jobId, e.outcome === 'cancelled' ? 'cancelled by an operator' : 'interrupted by shutdown');
        return;
      }
      const streak = (failing.get(e.jobId) ?? 0) + 1;
      failing.set(e.jobId, streak);
      if (e.outcome === 'lost') {
        // Another node died or froze with the run: said every time, with the run's node and token.
        log.warn({ ...fields, instanceId: e.instanceId, fencingToken: e.fencingToken, scheduledAt: new Date(e.scheduledAt).toISOString(), error: e.error }, 'job "%s": run lost (token %d): %s', e.jobId, e.fencingToken ?? 0, e.error ?? '');
      } else if (streak === 1) {
        logFailed(log, e, fields);
      } else {
        log.debug({ ...fields, error: e.error, streak }, 'run unsuccessful again');
      }
    }),
    runner.on('taskEnded', (e) => {
      // As for jobs: per task, the first failure and the recovery, not every repeat.
      // A success after successes says nothing: no line, and no fields made (tasks come by the thousand).
      if (e.outcome === 'succeeded' && !failingTasks.has(e.task)) return;
      const fields = { task: e.task, taskId: e.taskId, executor: e.executor, outcome: e.outcome, durationMs: Math.round(e.durationMs), ...(e.attempt > 1 ? { attempt: e.attempt } : {}) };
      if (e.outcome === 'succeeded') {
        const streak = failingTasks.get(e.task) ?? 0;
        failingTasks.delete(e.task);
        log.info({ ...fields, failedTasks: streak }, 'task "%s" recovered after %d unsuccessful %s', e.task, streak, runs(streak));
        return;
      }
      if (e.willRetry) {
        if (debug()) log.debug({ ...fields, error: e.error }, 'task attempt failed; retrying');
        return;
      }
      if (e.outcome === 'interrupted' || e.outcome === 'cancelled') {
        if (debug()) log.debug({ ...fields, error: e.error }, 'task %s', e.outcome);
        return;
      }
      const streak = (failingTasks.get(e.task) ?? 0) + 1;
      failingTasks.set(e.task, streak);
      if (streak === 1) log.warn({ ...fields, err: e.cause instanceof Error ? e.cause : undefined, error: e.error }, 'task "%s" %s: %s', e.task, e.outcome, e.error ?? 'no error message');
      else if (debug()) log.debug({ ...fields, error: e.error, streak }, 'task unsuccessful again');
    }),
    runner.on('skipped', (e) => {
      if (debug()) log.debug({ jobId: e.jobId, reason: e.reason, scheduledAt: new Date(e.scheduledAt).toISOString() }, 'start skipped');
    }),
    runner.on('missed', (e) => log.warn({ jobId: e.jobId, count: e.count }, 'job "%s": %d tick(s) ran on no node', e.jobId, e.count)),
    runner.on('jobState', (e) => {
      if (e.state === 'invalidSchedule') log.error({ jobId: e.jobId, cause: e.cause }, 'job "%s" has an invalid schedule: %s', e.jobId, e.cause);
      else log.info({ jobId: e.jobId, state: e.state }, 'job "%s" is now %s', e.jobId, e.state);
    }),
    runner.on('warning', (e) => log.warn({ jobId: e.jobId }, e.message)),
    runner.on('clockStep', (e) => {
      // Wall and monotonic clocks are read a moment apart, so a step of an hour measures 3599999 ms: say it to the second.
      const size = formatDuration(Math.max(1_000, Math.round(Math.abs(e.stepMs) / 1_000) * 1_000));
      const what = e.replanned ? 'every job is planned again from the new time' : 'the schedule keeps Redis time and does not move';
      log.warn({ stepMs: e.stepMs }, 'the wall clock stepped %s by %s; %s', e.stepMs > 0 ? 'forward' : 'back', size, what);
    }),
  ];
  return () => offs.forEach((off) => off());
}
