/**
 * Job definitions: the shape a user writes, `defineJob`, and the checks run at registration.
 * @module
 */
import type { SubmitTask } from './submit.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { validateZone } from '../cron/index.js';
import { parseCron } from '../cron/index.js';
import { describe, parseDuration, type Duration } from './duration.js';
import { parseRetry, type RetryOptions, type RetryPolicy } from './retry.js';

/** Where a job runs: on every node, or once per tick for the whole installation. */
export const JobScopes = { instance: 'instance', installation: 'installation' } as const;
/** `instance` (every node runs it) or `installation` (one node per tick, under a lease). */
export type JobScope = (typeof JobScopes)[keyof typeof JobScopes];

/**
 * A schedule value read from an environment variable at every fire, with a default.
 * Create one with {@link fromEnv}.
 */
export interface EnvSetting {
  /** The environment variable to read. */
  readonly env: string;
  /** The value used when the variable is unset or empty. */
  readonly default: string | number;
}

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

/** A job as a user writes it. Exactly one of `cron`, `fixedRate`, `fixedDelay`. */
export interface JobDefinition {
  /** Unique id: letters, digits, `.`, `_`, `-`, `:`. */
  readonly id: string;
  /** `instance` (default) or `installation`. */
  readonly scope?: JobScope;
  /** A six-field cron expression, seconds first (Spring's dialect). */
  readonly cron?: string | EnvSetting;
  /** The zone a cron is read in: an IANA id, `UTC` or a fixed offset like `+02:00`. Default UTC. */
  readonly zone?: string | EnvSetting;
  /** Start runs this far apart, start to start. */
  readonly fixedRate?: Duration | EnvSetting;
  /** Wait this long after each run ends. */
  readonly fixedDelay?: Duration | EnvSetting;
  /** fixedRate/fixedDelay only: delay before the first run after start. */
  readonly initialDelay?: Duration;
  /** Abort a run after this long. Default: the larger of 5 minutes and 3 intervals; 1 hour for a cron. */
  readonly timeout?: Duration;
  /** installation only: lease time, extended every half of it while the run goes on. Default 30s. */
  readonly lease?: Duration;
  /** installation only: how long after its tick a run may still start late. Default: one lease time, capped by the interval. */
  readonly misfireGrace?: Duration;
  /** Retries of a failed run on the same tick; see {@link RetryOptions}. Default: none. */
  readonly retry?: RetryOptions;
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
  /** The handler. */
  readonly run: JobHandler;
}

/** Where a job's handler runs. */
export const JobThreads = { loop: 'loop', worker: 'worker' } as const;
/** `loop` (the event loop) or `worker` (a worker thread). */
export type JobThread = (typeof JobThreads)[keyof typeof JobThreads];

/**
 * A job as `runner.add` also accepts it: a plain object declared before it is added, whose
 * `scope` TypeScript has widened to `string` (as in `const job = { scope: 'installation', ... }`);
 * the scope is checked when the job is added. A literal scope must still be a {@link JobScope}.
 * @typeParam S - The type of the object's `scope`, inferred.
 */
export type JobDefinitionLike<S extends string = JobScope> = Omit<JobDefinition, 'scope'> & {
  /** `instance` (default) or `installation`. */
  readonly scope?: string extends S ? string : S extends JobScope ? S : JobScope;
};

/** A job's schedule as declared, before settings overrides. */
export type ScheduleDeclaration =
  | { readonly kind: 'cron'; readonly value: string | EnvSetting; readonly zone: string | EnvSetting | undefined }
  | { readonly kind: 'fixedRate' | 'fixedDelay'; readonly value: Duration | EnvSetting };

/** A checked job definition with its durations in milliseconds. */
export interface NormalizedJob {
  readonly id: string;
  readonly scope: JobScope;
  readonly schedule: ScheduleDeclaration;
  readonly initialDelayMs: number;
  readonly timeoutMs: number | undefined;
  readonly leaseMs: number;
  readonly misfireGraceMs: number | undefined;
  readonly retry: RetryPolicy | undefined;
  readonly description: string | undefined;
  readonly thread: JobThread;
  readonly module: string | undefined;
  readonly run: JobHandler;
}

/** The default lease time of an installation job. */
const DEFAULT_LEASE_MS = 30_000;

const KEYS = new Set([
  'id', 'scope', 'cron', 'zone', 'fixedRate', 'fixedDelay', 'initialDelay', 'timeout', 'lease', 'misfireGrace', 'retry', 'description', 'thread', 'module', 'run',
]);
/** A job id: 1 to 128 letters, digits, `.`, `_`, `-` or `:` (the HTTP routes and the status reader use it too). */
export const JOB_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Reads a schedule value from an environment variable at every fire.
 * @example `cron: fromEnv('DIGEST_CRON', '0 0 8 * * *')`
 */
export function fromEnv(env: string, defaultValue: string | number): EnvSetting {
  if (typeof env !== 'string' || !ENV_NAME.test(env)) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `fromEnv: ${describe(env)} is not an environment variable name`);
  }
  return Object.freeze({ env, default: defaultValue });
}

/**
 * Checks a job definition and returns it unchanged, typed. A plain object of the same
 * shape is a valid job too; the runner runs the same checks when it is added.
 * @throws LeaseholdError `invalidJob` (or a more precise code) naming the job and the field.
 */
export function defineJob<T extends JobDefinition>(job: T): T {
  normalizeJob(job);
  return job;
}

/** Is this value an {@link EnvSetting}? */
export function isEnvSetting(value: unknown): value is EnvSetting {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'env' in value && 'default' in value;
}

/** Reads a setting's current value (the variable, or its default when unset or empty). */
export function readSetting<T>(value: T | EnvSetting, env: NodeJS.ProcessEnv = process.env): T | string | number {
  if (!isEnvSetting(value)) return value;
  const raw = env[value.env];
  return raw === undefined || raw.trim() === '' ? value.default : raw;
}

function fail(jobName: string, field: string, message: string, cause?: unknown): never {
  const code = cause instanceof LeaseholdError && cause.code !== ErrorCodes.invalidJob ? cause.code : ErrorCodes.invalidJob;
  throw new LeaseholdError(code, `job ${jobName}: field "${field}": ${message}`, { cause });
}

/** Runs `check` and rethrows its error as one naming the job and the field. */
function checked<T>(jobName: string, field: string, check: () => T): T {
  try {
    return check();
  } catch (err) {
    const msg = errorMessage(err);
    return fail(jobName, field, msg, err);
  }
}

function checkSettingShape(jobName: string, field: string, value: EnvSetting): void {
  if (typeof value.env !== 'string' || !ENV_NAME.test(value.env)) fail(jobName, field, `${describe(value.env)} is not an environment variable name`);
  if (typeof value.default !== 'string' && typeof value.default !== 'number') fail(jobName, field, 'a setting needs a string or number default');
}

/**
 * Checks a definition and converts it. Literal schedule values are checked strictly; a
 * setting's default is checked too, and its live value is checked at every fire.
 * @throws LeaseholdError naming the job and the field at fault.
 */
export function normalizeJob(input: unknown): NormalizedJob {
  // Where the definition is being read, for a getter or proxy of it that throws.
  const at = { job: '?', field: 'id' };
  try {
    return normalizeFields(input, at);
  } catch (err) {
    if (err instanceof LeaseholdError) throw err;
    let why: string;
    try {
      why = errorMessage(err);
    } catch {
      why = 'an unprintable value';
    }
    throw new LeaseholdError(ErrorCodes.invalidJob, `job ${at.job}: field "${at.field}": reading it threw: ${why}`, { cause: err });
  }
}

function normalizeFields(input: unknown, at: { job: string; field: string }): NormalizedJob {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new LeaseholdError(ErrorCodes.invalidJob, `a job must be an object, got ${describe(input)}`);
  }
  // Each field is read once, so a getter cannot answer one check and then another.
  const source = input as Record<string, unknown>;
  const job: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const key of KEYS) {
    at.field = key;
    job[key] = source[key];
    if (key === 'id') at.job = describe(job[key]);
  }
  at.field = 'id';
  const rawId = job['id'];
  if (typeof rawId !== 'string' || !JOB_ID_PATTERN.test(rawId)) {
    throw new LeaseholdError(
      ErrorCodes.invalidJob,
      `job ${describe(rawId)}: field "id": must be 1 to 128 letters, digits, ".", "_", "-" or ":"`,
    );
  }
  const name = JSON.stringify(rawId);
  at.job = name;
  for (const key of Object.keys(source)) {
    if (!KEYS.has(key)) fail(name, key, `unknown field (known: ${[...KEYS].join(', ')})`);
  }
  const scope = job['scope'] ?? 'instance';
  if (scope !== 'instance' && scope !== 'installation') fail(name, 'scope', `${describe(scope)} must be "instance" or "installation"`);
  if (typeof job['run'] !== 'function') fail(name, 'run', 'must be a function (the job handler)');
  if (job['description'] !== undefined && typeof job['description'] !== 'string') fail(name, 'description', 'must be a string');
  const thread = job['thread'] ?? 'loop';
  if (thread !== 'loop' && thread !== 'worker') fail(name, 'thread', `${describe(thread)} must be "loop" or "worker"`);
  const module = job['module'];
  if (module !== undefined && (typeof module !== 'string' || module === '')) fail(name, 'module', `${describe(module)} must be a module URL or path (the jobs module's import.meta.url)`);
  if (module !== undefined && thread !== 'worker') fail(name, 'module', 'applies to jobs on worker threads only (thread: "worker")');

  const kinds = (['cron', 'fixedRate', 'fixedDelay'] as const).filter((k) => job[k] !== undefined);
  if (kinds.length === 0) fail(name, 'cron', 'no schedule: give exactly one of cron, fixedRate, fixedDelay');
  if (kinds.length > 1) fail(name, kinds[1] ?? 'cron', `two schedules (${kinds.join(' and ')}): give exactly one of cron, fixedRate, fixedDelay`);
  const kind = kinds[0] ?? 'cron';
  const value = job[kind];

  let schedule: ScheduleDeclaration;
  at.field = kind;
  if (kind === 'cron') {
    at.field = 'zone';
    const zone = job['zone'];
    if (zone !== undefined) {
      if (isEnvSetting(zone)) checkSettingShape(name, 'zone', zone);
      else if (typeof zone !== 'string') fail(name, 'zone', `${describe(zone)} must be a string`);
    }
    // A setting's default is checked like a literal; its live value at every fire, where a bad
    // one marks the job invalidSchedule instead of stopping the node (SPEC 1).
    const zoneDeclared = zone === undefined ? undefined : isEnvSetting(zone) ? zone.default : zone;
    const zoneName = zoneDeclared === undefined ? undefined : checked(name, 'zone', () => validateZone(String(zoneDeclared)));
    at.field = 'cron';
    if (isEnvSetting(value)) checkSettingShape(name, 'cron', value);
    else if (typeof value !== 'string') fail(name, 'cron', `${describe(value)} must be a string`);
    const expr = isEnvSetting(value) ? value.default : value;
    checked(name, 'cron', () => parseCron(String(expr), zoneName ? { zone: zoneName } : {}));
    schedule = { kind, value: value as string | EnvSetting, zone: zone as string | EnvSetting | undefined };
  } else {
    if (job['zone'] !== undefined) fail(name, 'zone', `a zone applies to a cron schedule only, not to ${kind}`);
    if (isEnvSetting(value)) {
      checkSettingShape(name, kind, value);
      checked(name, kind, () => parseDuration(value.default, `default of ${value.env}`));
    } else {
      checked(name, kind, () => parseDuration(value, 'the period'));
    }
    schedule = { kind, value: value as Duration | EnvSetting };
  }

  if (kind === 'cron' && job['initialDelay'] !== undefined) fail(name, 'initialDelay', 'applies to fixedRate and fixedDelay only');
  const initialDelayMs = job['initialDelay'] === undefined ? 0 : checked(name, 'initialDelay', () => parseDuration(job['initialDelay'], 'initialDelay', true));
  const timeoutMs = job['timeout'] === undefined ? undefined : checked(name, 'timeout', () => parseDuration(job['timeout'], 'timeout'));
  if (scope !== 'installation') {
    if (job['lease'] !== undefined) fail(name, 'lease', 'applies to installation jobs only (scope: "installation")');
    if (job['misfireGrace'] !== undefined) fail(name, 'misfireGrace', 'applies to installation jobs only (scope: "installation")');
  }
  const leaseMs = job['lease'] === undefined ? DEFAULT_LEASE_MS : checked(name, 'lease', () => parseDuration(job['lease'], 'lease'));
  if (leaseMs < 200) fail(name, 'lease', 'must be at least 200ms (it is extended every half lease)');
  const misfireGraceMs = job['misfireGrace'] === undefined ? undefined : checked(name, 'misfireGrace', () => parseDuration(job['misfireGrace'], 'misfireGrace', true));

  return {
    id: rawId,
    scope,
    schedule,
    initialDelayMs,
    timeoutMs,
    leaseMs,
    misfireGraceMs,
    retry: job['retry'] === undefined ? undefined : checked(name, 'retry', () => parseRetry(job['retry'])),
    description: job['description'] as string | undefined,
    thread,
    module: module as string | undefined,
    run: job['run'] as JobHandler,
  };
}

/**
 * Checks a list of jobs as a runner would: each definition, and that ids are unique. Hands
 * each error to `onError` (which may throw to stop at the first) and each job that passed to
 * `onJob`; keeps nothing itself (a node checks ten thousand jobs before it adds them).
 */
function checkEach(jobs: unknown, onError: (err: LeaseholdError) => void, onJob?: (job: NormalizedJob) => void): void {
  if (!Array.isArray(jobs)) {
    onError(new LeaseholdError(ErrorCodes.invalidModule, `expected an array of jobs, got ${describe(jobs)}`));
    return;
  }
  const seen = new Set<string>();
  for (const definition of jobs) {
    let job: NormalizedJob;
    try {
      job = normalizeJob(definition);
    } catch (err) {
      // normalizeJob throws only LeaseholdErrors; anything else is a bug to surface.
      if (!(err instanceof LeaseholdError)) throw err;
      onError(err);
      continue;
    }
    if (seen.has(job.id)) {
      onError(new LeaseholdError(ErrorCodes.duplicateJob, `job ${JSON.stringify(job.id)}: field "id": another job has the same id`));
      continue;
    }
    seen.add(job.id);
    onJob?.(job);
  }
}

const throwFirst = (err: LeaseholdError): never => {
  throw err;
};

/**
 * Checks a list of jobs as a runner would: each definition, and that ids are unique.
 * @returns the normalized jobs, or throws the first error.
 */
export function normalizeJobs(jobs: unknown): NormalizedJob[] {
  const passed: NormalizedJob[] = [];
  checkEach(jobs, throwFirst, (job) => passed.push(job));
  return passed;
}

/**
 * Checks a list of jobs as a runner would, as {@link normalizeJobs} does, without keeping the
 * normalized jobs.
 * @throws LeaseholdError the first error.
 */
export function assertJobs(jobs: unknown): void {
  checkEach(jobs, throwFirst);
}

/** Every check error of a list of jobs, so a CI run reports all at once. */
export function checkJobs(jobs: unknown): string[] {
  const errors: string[] = [];
  checkEach(jobs, (err) => errors.push(err.message));
  return errors;
}
