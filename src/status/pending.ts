/**
 * The stats writer's jobs: for each, what waits to be written (merged into one {@link JobBatch}),
 * its next tick and description to go with the next write, and the batch sent and not yet
 * acknowledged. Also the minute refresh, which marks every job's fields to be written again.
 * @module
 */
import type { JobView, Scheduler } from '../runner/runner.js';
import type { RecordBatch } from '../redis/record.js';
import { JobBatch, iso, type StreakRuns } from './batch.js';
import { describeJob } from './describe.js';

/** What the writer needs of a runner. */
export type WriterCore = Pick<Scheduler, 'instanceId' | 'on' | 'jobs' | 'job' | 'now' | 'triggerOf'>;

/** A batch sent and not yet acknowledged; resent as it is (same sequence number) until it is. */
export interface Inflight {
  readonly seq: number;
  readonly batch: RecordBatch;
  /** An installation job's runs as they count for the failing streak. */
  readonly streak: StreakRuns | undefined;
  /** Tries Redis answered with the batch's own error (nothing of it written). */
  tries: number;
}

/** One job as the stats writer holds it. */
export interface PendingJob {
  readonly jobId: string;
  readonly instanceScoped: boolean;
  /** What waits to be written; made with the first thing to write (most jobs have nothing). */
  pending: JobBatch | undefined;
  /**
   * When the job's fields were asked to be created and described (its registration or minute
   * refresh), ISO: the description is read from the runner as the batch is sent, so that ten
   * thousand jobs registered or refreshed at once do not hold ten thousand descriptions.
   */
  initAt: string | undefined;
  /** Whether that refresh also writes this node's view of the schedule's validity. */
  initCause: boolean;
  /**
   * A grid job's next tick as last planned (epoch ms, null: none), written with the job's next
   * batch: kept as a number, so a tick of many jobs makes neither a batch nor a text per job.
   */
  nextDueAt: number | null | undefined;
  inflight: Inflight | undefined;
  scheduleKey: string | undefined;
  state: string;
}

/** Whether a job has something to send: an unacknowledged batch, fields to create, or pending stats. */
export function hasWork(s: PendingJob): boolean {
  return s.inflight !== undefined || s.initAt !== undefined || (s.pending !== undefined && !s.pending.isEmpty);
}

/** The jobs of one stats writer, by id. */
export class PendingJobs {
  private readonly byId = new Map<string, PendingJob>();

  /**
   * @param wake - called when something became pending: arms the next write.
   * @param onNewJob - called with the ids of jobs seen for the first time.
   */
  constructor(
    private readonly core: WriterCore,
    private readonly runsCap: number,
    private readonly wake: () => void,
    private readonly onNewJob: ((jobId: string) => void) | undefined,
  ) {}

  /** Number of jobs whose stats are not yet in Redis. */
  get backlog(): number {
    let n = 0;
    for (const s of this.byId.values()) if (hasWork(s)) n++;
    return n;
  }

  /** How many runs the stats not yet in Redis count (sent and unacknowledged, or pending). */
  get unwrittenRuns(): number {
    let n = 0;
    for (const s of this.byId.values()) n += (s.inflight?.batch.incr?.['runs'] ?? 0) + (s.inflight?.batch.leaseLost?.length ?? 0) + (s.pending?.runCount ?? 0);
    return n;
  }

  /** Whether the stats not yet in Redis add to any counter (runs, skips, missed ticks). */
  get unwrittenCounts(): boolean {
    for (const s of this.byId.values()) {
      const inflight = s.inflight?.batch;
      if (Object.keys(inflight?.incr ?? {}).length > 0 || (inflight?.leaseLost?.length ?? 0) > 0 || s.pending?.counts === true) return true;
    }
    return false;
  }

  /** The jobs with something to send (most jobs have nothing: only these are collected). */
  due(): PendingJob[] {
    const due: PendingJob[] = [];
    for (const s of this.byId.values()) if (hasWork(s)) due.push(s);
    return due;
  }

  /** A job's pending batch, about to get something to write: the next write is armed. */
  batch(jobId: string): JobBatch {
    this.wake();
    return this.batchOf(this.get(jobId));
  }

  /**
   * A job, registered (its fields to be created) the first time it is seen.
   * @param now - when, ISO (default: the runner's now): one text for the jobs registered at once.
   * @param known - the job's view when the caller has it (else it is asked of the runner).
   */
  get(jobId: string, now?: string, known?: JobView): PendingJob {
    let s = this.byId.get(jobId);
    if (s) return s;
    const view = known ?? this.core.job(jobId);
    const instanceScoped = (view?.job.scope ?? 'instance') === 'instance';
    s = { jobId, instanceScoped, pending: undefined, initAt: undefined, initCause: false, nextDueAt: undefined, inflight: undefined, scheduleKey: view?.schedule?.trigger.key, state: view?.state ?? 'ok' };
    this.byId.set(jobId, s);
    if (view) {
      s.initAt = now ?? iso(this.core.now());
      this.wake();
    }
    this.onNewJob?.(jobId);
    return s;
  }

  /** A job's next due time changed. */
  scheduled(jobId: string, nextDueAt: number | null): void {
    const s = this.get(jobId);
    const trigger = this.core.triggerOf(jobId);
    // A grid job's next tick is planned when a tick fires, so it goes with that run's write
    // (or the node that ran it writes it); only a fixedDelay's next due, planned after the
    // run's end, is written on its own.
    if (trigger !== undefined && trigger.kind !== 'fixedDelay') s.nextDueAt = nextDueAt;
    else {
      s.nextDueAt = undefined;
      this.batchOf(s).setField('nextDueAt', iso(nextDueAt), true);
      this.wake();
    }
    if (trigger && trigger.key !== s.scheduleKey) {
      // The job's first schedule (the runner plans each job as it starts, after the writer has
      // registered it) while its fields wait to be created: the batch that creates them reads
      // the description as it is sent, so none is made here (100,000 jobs would hold 100,000
      // batches until the first write).
      if (s.scheduleKey === undefined && s.initAt !== undefined) {
        s.scheduleKey = trigger.key;
        return;
      }
      // A new schedule: "three scheduled fires without a success" counts from now.
      const pending = this.batchOf(s);
      if (s.scheduleKey !== undefined) pending.setField('resumedAt', iso(this.core.now()));
      s.scheduleKey = trigger.key;
      const view = this.core.job(jobId);
      if (view) pending.describe(describeJob(view));
      this.wake();
    }
  }

  /** A job became valid, invalid, paused or resumed. */
  stateChanged(jobId: string, state: string, cause: string | undefined): void {
    this.wake();
    const s = this.get(jobId);
    const pending = this.batchOf(s);
    pending.setField('invalidCause', state === 'invalidSchedule' ? (cause ?? 'invalid schedule') : '');
    if (state === 'ok' && s.state !== 'ok') pending.setField('resumedAt', iso(this.core.now()));
    s.state = state;
    const view = this.core.job(jobId);
    if (view) pending.describe(describeJob(view));
  }

  /**
   * The minute refresh: every job's fields again, created if absent, with its description and
   * this node's view of the schedule's validity (so a cause written by a node that is gone does
   * not stay forever). An installation job is refreshed only where `refreshes` says so. Only
   * marked here: each job's fields are read as its batch is sent ({@link take}).
   */
  refresh(refreshes: ((jobId: string) => boolean) | undefined): void {
    this.wake();
    const now = iso(this.core.now());
    for (const view of this.core.jobs()) {
      if (refreshes && view.job.scope === 'installation' && !refreshes(view.job.id)) continue;
      const s = this.get(view.job.id);
      s.initAt = now;
      s.initCause = true;
    }
  }

  /**
   * The batch to send for a job, taken from it: what is pending, with its next tick, `seenAt`,
   * and the job's description (and, after a refresh, its schedule's validity) as the runner has
   * them now, when they were asked for.
   */
  take(s: PendingJob, seenAt: string): JobBatch {
    const batch = this.batchOf(s);
    s.pending = undefined;
    if (s.nextDueAt !== undefined) batch.setField('nextDueAt', iso(s.nextDueAt), true, true);
    s.nextDueAt = undefined;
    const initAt = s.initAt;
    if (initAt !== undefined) {
      const view = this.core.job(s.jobId);
      if (view) {
        batch.initialize(describeJob(view), initAt);
        if (s.initCause) batch.setField('invalidCause', view.state === 'invalidSchedule' ? (view.invalidCause ?? 'invalid schedule') : '');
      }
      s.initAt = undefined;
      s.initCause = false;
    }
    batch.setField('seenAt', seenAt, true);
    return batch;
  }

  /** A job's pending batch, made when it first gets something. */
  private batchOf(s: PendingJob): JobBatch {
    s.pending ??= new JobBatch(s.instanceScoped, this.runsCap);
    return s.pending;
  }
}
