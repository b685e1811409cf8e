/**
 * The shape of a job as a user writes it: the scopes, the handler and its context, and the
 * definition, a union by schedule kind (`cron`, `fixedRate`, `fixedDelay`) so that TypeScript
 * refuses what the checks of `defineJob` refuse where it can: two schedules, none, a zone or an
 * initial delay on the wrong kind, an unknown key, a malformed duration.
 * @module
 */
import type { Logger } from '../logger.js';
import type { Duration } from './duration.js';
import type { RetryOptions } from './retry.js';
import type { EnvSetting } from './setting.js';
import type { JobThread, SubmitTask } from './submit.js';
import type { WorkerResourceLimits } from './limits.js';

/** Where a job runs: on every node, or once per tick for the whole installation. */
export const JobScopes = { instance: 'instance', installation: 'installation' } as const;
/** `instance` (every node runs it) or `installation` (one node per tick, under a lease). */
export type JobScope = (typeof JobScopes)[keyof typeof JobScopes];

/** What a job's handler receives. */
export interface JobContext {
  /** Aborts when the run must stop; `signal.reason` is a LeaseholdError whose code says why. */
  readonly signal: AbortSignal;
  /** A pino child logger bound to the job id and the run id. */
  readonly log: Logger;
  /** The job's id. */
  readonly jobId: string;
  /** A unique id of this run. */
  readonly runId: string;
  /** The tick this run is for. */
  readonly scheduledAt: Date;
  /** When the handler was called. */
  readonly startedAt: Date;
  /** The node running it. */
  readonly instanceId: string;
  /** Which attempt at the tick this is: 1, or more for a retry (see the job's `retry`). */
  readonly attempt: number;
  /** For installation jobs: a number that grows with every claim of this job. */
  readonly fencingToken?: number;
  /**
   * Submits a background task from the run, as `runner.submit` does: how a job started by
   * `leasehold start` hands work to an executor (one task per recipient of a digest, say).
   * The task must be registered on the node or given as its definition. Not in a job on a
   * worker thread (it rejects with `invalidTask`): submit from a job on the event loop.
   */
  readonly submit: SubmitTask;
}

/** A job's handler. Its promise settling ends the run. */
export type JobHandler = (ctx: JobContext) => unknown;

/**
 * The fields of every job definition, whatever its schedule.
 * @typeParam Sc - The type of `scope`: a {@link JobScope}, or `string` in {@link JobDefinitionLike}.
 * @typeParam D - The type of a duration: a {@link Duration}, or any string in {@link JobDefinitionLike}.
 */
export interface JobDefinitionBase<Sc extends string = JobScope, D extends string | number = Duration> {
  /** Unique id: letters, digits, `.`, `_`, `-`, `:`. */
  readonly id: string;
  /** `instance` (default) or `installation`. */
  readonly scope?: Sc;
  /** Abort a run after this long. Default: the larger of 5 minutes and 3 intervals; 1 hour for a cron. */
  readonly timeout?: D;
  /** installation only: lease time, extended every half of it while the run goes on. Default 30s. */
  readonly lease?: D;
  /** installation only: how long after its tick a run may still start late. Default: one lease time, capped by the interval. */
  readonly misfireGrace?: D;
  /** Retries of a failed run on the same tick; see {@link RetryOptions}. Default: none. */
  readonly retry?: RetryOptions<D>;
  /** Free text shown in the status. */
  readonly description?: string;
  /**
   * Where the handler runs: `loop` (default, the event loop) or `worker` (a worker thread, for
   * blocking or CPU-heavy code: the lease watcher stays on the event loop, and a timeout, lease
   * loss, cancel or shutdown terminates the thread after a short grace).
   */
  readonly thread?: JobThread;
  /**
   * `thread: 'worker'`: the module that exports this job (its `import.meta.url`), loaded in the
   * worker thread. The CLI fills it in with the jobs module.
   */
  readonly module?: string;
  /**
   * `thread: 'worker'`: limits of the job's thread (heap size, stack); a run whose thread reaches
   * them is recorded `failed` with code `workerOutOfMemory`, and the node goes on. Default: Node's
   * (see {@link WorkerResourceLimits}).
   */
  readonly resourceLimits?: WorkerResourceLimits;
  /** The handler. */
  readonly run: JobHandler;
}

/** A job on a cron schedule. See {@link JobDefinitionBase} for the type parameters. */
export interface CronJobDefinition<Sc extends string = JobScope, D extends string | number = Duration> extends JobDefinitionBase<Sc, D> {
  /** A six-field cron expression, seconds first (Spring's dialect). */
  readonly cron: string | EnvSetting<string>;
  /** The zone the cron is read in: an IANA id, `UTC` or a fixed offset like `+02:00`. Default UTC. */
  readonly zone?: string | EnvSetting<string>;
  /** Not with `cron`: a job has one schedule. */
  readonly fixedRate?: never;
  /** Not with `cron`: a job has one schedule. */
  readonly fixedDelay?: never;
  /** fixedRate and fixedDelay only: a cron's first run is its first tick. */
  readonly initialDelay?: never;
}

/** A job whose runs start a period apart. See {@link JobDefinitionBase} for the type parameters. */
export interface FixedRateJobDefinition<Sc extends string = JobScope, D extends string | number = Duration> extends JobDefinitionBase<Sc, D> {
  /** Start runs this far apart, start to start. */
  readonly fixedRate: D | EnvSetting<D>;
  /** Delay before the first run after start. */
  readonly initialDelay?: D;
  /** Not with `fixedRate`: a job has one schedule. */
  readonly cron?: never;
  /** Not with `fixedRate`: a job has one schedule. */
  readonly fixedDelay?: never;
  /** cron only. */
  readonly zone?: never;
}

/** A job that waits a delay after each run. See {@link JobDefinitionBase} for the type parameters. */
export interface FixedDelayJobDefinition<Sc extends string = JobScope, D extends string | number = Duration> extends JobDefinitionBase<Sc, D> {
  /** Wait this long after each run ends. */
  readonly fixedDelay: D | EnvSetting<D>;
  /** Delay before the first run after start. */
  readonly initialDelay?: D;
  /** Not with `fixedDelay`: a job has one schedule. */
  readonly cron?: never;
  /** Not with `fixedDelay`: a job has one schedule. */
  readonly fixedRate?: never;
  /** cron only. */
  readonly zone?: never;
}

/**
 * A job as a user writes it: exactly one of `cron`, `fixedRate`, `fixedDelay`, each with the
 * options of its kind. See {@link JobDefinitionBase} for the type parameters.
 */
export type JobDefinition<Sc extends string = JobScope, D extends string | number = Duration> = CronJobDefinition<Sc, D> | FixedRateJobDefinition<Sc, D> | FixedDelayJobDefinition<Sc, D>;

/**
 * A job as `runner.add` also accepts it: a plain object declared before it is added, whose
 * `scope` and durations TypeScript has widened to `string`, as in
 * `const job = { scope: 'installation', fixedRate: '1m', run }`; they are checked when the job
 * is added. A literal scope must still be a {@link JobScope}, and a literal duration a
 * {@link Duration}.
 * @typeParam S - The type of the object's `scope`, inferred.
 * @typeParam D - The type of the object's durations written as strings, inferred: `string` once
 * one was widened.
 */
export type JobDefinitionLike<S extends string = JobScope, D extends string = Exclude<Duration, number>> = JobDefinition<
  string extends S ? string : S extends JobScope ? S : JobScope,
  number | (string extends D ? string : D extends Duration ? D : Duration)
>;
