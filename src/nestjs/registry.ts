/**
 * `SchedulerRegistry` and `CronJob`, with @nestjs/schedule's method names, over a leasehold
 * runner. A cron job of the registry is a leasehold job: `start()` adds it to this process's
 * runner and `stop()` removes it from this process (as @nestjs/schedule's stop the timer of
 * this process); intervals and timeouts added by hand are kept as @nestjs/schedule keeps them.
 * @module
 */
import { ErrorCodes, LeaseholdError, type JobContext, type JobDefinition, type JobScope, type Runner } from '../index.js';
import type { LeaseholdJobOptions } from './declarations.js';
import { sixFields } from './expressions.js';

/** What a registry's job is added to and removed from. */
interface Binding {
  readonly runner: Runner;
  readonly id: string;
  readonly scope: JobScope;
}

/** A cron job's expression, as `cron`'s `CronJob` shows it. */
export interface CronTimeView {
  /** The expression as given. */
  readonly source: string;
  /** The zone it is read in, when one was given. */
  readonly timeZone: string | undefined;
}

/**
 * A cron job, as `cron`'s `CronJob` is built (`new CronJob(cronTime, onTick, onComplete, start, timeZone)`)
 * and as `SchedulerRegistry` hands it out. It runs once it is in a registry and started:
 * `registry.addCronJob(name, job)` then `job.start()` (or `start: true`).
 */
export class CronJob {
  /** The expression and zone. */
  readonly cronTime: CronTimeView;
  private binding: Binding | undefined;
  private wanted: boolean;
  private readonly options: LeaseholdJobOptions & { readonly zone?: string };
  private readonly onTick: (ctx: JobContext) => unknown;
  private readonly onComplete: (() => unknown) | undefined;

  /**
   * @param cronTime - Five fields (minute first) or six (seconds first).
   * @param onTick - What each run does; it gets the run's {@link JobContext}.
   * @param onComplete - Called when the job is stopped.
   * @param start - Start as soon as it is in a registry. Default false.
   * @param timeZone - The zone the expression is read in. Default UTC.
   * @param options - leasehold's options of the job; see {@link LeaseholdJobOptions}.
   */
  constructor(cronTime: string, onTick: (ctx: JobContext) => unknown, onComplete?: (() => unknown) | null, start?: boolean | null, timeZone?: string | null, options: LeaseholdJobOptions = {}) {
    this.cronTime = { source: cronTime, timeZone: timeZone ?? undefined };
    this.onTick = onTick;
    this.onComplete = onComplete ?? undefined;
    this.wanted = start === true;
    this.options = { ...options, ...(timeZone ? { zone: timeZone } : {}) };
  }

  /** Builds a job from named parameters, as `CronJob.from` does. */
  static from(params: { cronTime: string; onTick: (ctx: JobContext) => unknown; onComplete?: () => unknown; start?: boolean; timeZone?: string } & LeaseholdJobOptions): CronJob {
    const { cronTime, onTick, onComplete, start, timeZone, ...options } = params;
    return new CronJob(cronTime, onTick, onComplete, start, timeZone, options);
  }

  /** Whether it is scheduled in this process. */
  get isActive(): boolean {
    const b = this.binding;
    return b !== undefined && b.runner.jobs().some((j) => j.id === b.id);
  }

  /** Whether it is scheduled in this process (`cron`'s older name). */
  get running(): boolean {
    return this.isActive;
  }

  /** Schedules it in this process (once it is in a registry). */
  start(): void {
    this.wanted = true;
    const b = this.binding;
    if (!b || this.isActive) return;
    b.runner.add(this.definition(b));
  }

  /** Unschedules it in this process; a run in progress ends as it would have. */
  stop(): void {
    this.wanted = false;
    const b = this.binding;
    if (b && b.runner.remove(b.id)) this.onComplete?.();
  }

  /** The next tick, or null when it is not scheduled here. */
  nextDate(): Date | null {
    const b = this.binding;
    const next = b?.runner.jobs().find((j) => j.id === b.id)?.nextDueAt;
    return next ? new Date(next) : null;
  }

  /** Runs `onTick` now, in this process, outside the schedule (as `cron`'s `fireOnTick`). */
  fireOnTick(): boolean {
    const b = this.binding;
    return b !== undefined && b.runner.runNow(b.id);
  }

  /** Binds it to a runner under an id (the registry does); starts it when it was wanted. @internal */
  bind(binding: Binding | undefined): void {
    this.binding = binding;
    if (binding && this.wanted) this.start();
  }

  private definition(b: Binding): JobDefinition {
    const { zone, scope, ...options } = this.options;
    const cron = sixFields(this.cronTime.source, b.id);
    const onTick = this.onTick;
    return { ...options, id: b.id, scope: scope ?? b.scope, cron, ...(zone ? { zone } : {}), run: (ctx) => onTick(ctx) } as JobDefinition;
  }
}

function notFound(kind: string, name: string): LeaseholdError {
  return new LeaseholdError(ErrorCodes.invalidState, `No ${kind} was found with the given name (${name}): look it up with getCronJobs(), getIntervals() or getTimeouts()`);
}

function taken(kind: string, name: string): LeaseholdError {
  return new LeaseholdError(ErrorCodes.duplicateJob, `${kind} with the given name (${name}) already exists: delete it first, or give another name`);
}

/**
 * The scheduled work of this process by name, as @nestjs/schedule's `SchedulerRegistry`:
 * inject it into a provider. Decorated `@Cron` methods are in it under their ids.
 */
export class SchedulerRegistry {
  private readonly cronJobs = new Map<string, CronJob>();
  private readonly intervals = new Map<string, unknown>();
  private readonly timeouts = new Map<string, unknown>();

  /** @param runner - The runner the jobs are added to; @param defaultScope - the scope of a job that names none. */
  constructor(
    private readonly runner: Runner,
    private readonly defaultScope: JobScope,
  ) {}

  /** Whether a cron job, interval or timeout of that name is known. */
  doesExist(type: 'cron' | 'interval' | 'timeout', name: string): boolean {
    return (type === 'cron' ? this.cronJobs : type === 'interval' ? this.intervals : this.timeouts).has(name);
  }

  /** The cron job of that name. @throws LeaseholdError `invalidState` when there is none. */
  getCronJob(name: string): CronJob {
    const job = this.cronJobs.get(name);
    if (!job) throw notFound('Cron Job', name);
    return job;
  }

  /** Every cron job, by name. */
  getCronJobs(): Map<string, CronJob> {
    return new Map(this.cronJobs);
  }

  /**
   * Adds a cron job under a name (its leasehold job id), started when it was built with
   * `start: true` or once `job.start()` is called.
   * @throws LeaseholdError `duplicateJob` when the name is taken.
   */
  addCronJob(name: string, job: CronJob): void {
    if (this.cronJobs.has(name)) throw taken('Cron Job', name);
    if (!(job instanceof CronJob)) {
      throw new LeaseholdError(ErrorCodes.invalidJob, `addCronJob(${JSON.stringify(name)}): expected a CronJob from leasehold/nestjs (import { CronJob } from 'leasehold/nestjs'), got another object`);
    }
    job.bind({ runner: this.runner, id: name, scope: this.defaultScope });
    this.cronJobs.set(name, job);
  }

  /** Stops a cron job in this process and forgets it. @throws LeaseholdError `invalidState` when there is none. */
  deleteCronJob(name: string): void {
    const job = this.getCronJob(name);
    job.stop();
    job.bind(undefined);
    this.cronJobs.delete(name);
  }

  /** The interval of that name: a timer added with `addInterval`, or the job of an `@Interval`. */
  getInterval<T = unknown>(name: string): T {
    if (!this.intervals.has(name)) throw notFound('Interval', name);
    return this.intervals.get(name) as T;
  }

  /** Keeps a timer (from `setInterval`) under a name. */
  addInterval<T = unknown>(name: string, intervalId: T): void {
    if (this.intervals.has(name)) throw taken('Interval', name);
    this.intervals.set(name, intervalId);
  }

  /** The names of the intervals. */
  getIntervals(): string[] {
    return [...this.intervals.keys()];
  }

  /** Clears an interval (an `@Interval` job is removed from this process) and forgets it. */
  deleteInterval(name: string): void {
    const value = this.getInterval(name);
    if (value instanceof ScheduledWork) value.stop();
    // eslint-disable-next-line no-restricted-globals -- the application's own timer, from its setInterval
    else clearInterval(value as Parameters<typeof clearInterval>[0]);
    this.intervals.delete(name);
  }

  /** The timeout of that name: a timer added with `addTimeout`, or the timer of a `@Timeout`. */
  getTimeout<T = unknown>(name: string): T {
    if (!this.timeouts.has(name)) throw notFound('Timeout', name);
    return this.timeouts.get(name) as T;
  }

  /** Keeps a timer (from `setTimeout`) under a name. */
  addTimeout<T = unknown>(name: string, timeoutId: T): void {
    if (this.timeouts.has(name)) throw taken('Timeout', name);
    this.timeouts.set(name, timeoutId);
  }

  /** The names of the timeouts. */
  getTimeouts(): string[] {
    return [...this.timeouts.keys()];
  }

  /** Clears a timeout and forgets it. */
  deleteTimeout(name: string): void {
    const value = this.getTimeout(name);
    if (value instanceof ScheduledWork) value.stop();
    // eslint-disable-next-line no-restricted-globals -- the application's own timer, from its setTimeout
    else clearTimeout(value as Parameters<typeof clearTimeout>[0]);
    this.timeouts.delete(name);
  }
}

/** An `@Interval` job or `@Timeout` timer as the registry holds it: `stop()` ends it in this process. */
export class ScheduledWork {
  /** @param name - Its name; @param stop - ends it in this process. */
  constructor(
    readonly name: string,
    readonly stop: () => void,
  ) {}
}
