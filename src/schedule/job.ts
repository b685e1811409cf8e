/**
 * Job definitions: the shape a user writes, `defineJob`, and the checks run at registration.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage, leaseholdError } from '../errors.js';
import { parseCron, validateZone } from '../cron/index.js';
import { describe, readDuration, type Duration } from './duration.js';
import type { JobDefinition, JobHandler, JobScope } from './definition.js';
import { parseRetry, type RetryPolicy } from './retry.js';
import { checksDeferred } from './deferred.js';
import { ENV_NAME, isEnvSetting, type EnvSetting, type ScheduleDeclaration } from './setting.js';
import type { JobThread } from './submit.js';
import { readResourceLimits, type WorkerResourceLimits } from './limits.js';

export {
  JobScopes,
  type CronJobDefinition,
  type FixedDelayJobDefinition,
  type FixedRateJobDefinition,
  type JobContext,
  type JobDefinition,
  type JobDefinitionBase,
  type JobDefinitionLike,
  type JobHandler,
  type JobScope,
} from './definition.js';

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
  /** `thread: 'worker'`: the limits of the job's thread; undefined: Node's defaults. */
  readonly resourceLimits: WorkerResourceLimits | undefined;
  readonly run: JobHandler;
}

/** The default lease time of an installation job. */
const DEFAULT_LEASE_MS = 30_000;

const KEYS = new Set([
  'id', 'scope', 'cron', 'zone', 'fixedRate', 'fixedDelay', 'initialDelay', 'timeout', 'lease', 'misfireGrace', 'retry', 'description', 'thread', 'module', 'resourceLimits', 'run',
]);
/** A job id: 1 to 128 letters, digits, `.`, `_`, `-` or `:` (the HTTP routes and the status reader use it too). */
export const JOB_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Checks a job definition and returns it unchanged, typed. A plain object of the same
 * shape is a valid job too; the runner runs the same checks when it is added. While
 * `leasehold check` or `leasehold start` loads a jobs module, the checks wait for the command,
 * which checks every job of the module and names each wrong one.
 * @throws LeaseholdError `invalidJob` (or a more precise code) naming the job and the field.
 */
export function defineJob(job: JobDefinition): JobDefinition {
  if (!checksDeferred()) normalizeJob(job);
  return job;
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
    throw leaseholdError(ErrorCodes.invalidJob, { job: at.job, field: at.field, problem: `reading it threw: ${why}` }, { cause: err });
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
  const limits = job['resourceLimits'];
  if (limits !== undefined && thread !== 'worker') fail(name, 'resourceLimits', 'applies to jobs on worker threads only (thread: "worker")');
  const resourceLimits = limits === undefined ? undefined : checked(name, 'resourceLimits', () => readResourceLimits(limits));

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
      checked(name, kind, () => readDuration(value.default, `default of ${value.env}`));
    } else {
      checked(name, kind, () => readDuration(value, 'the period'));
    }
    schedule = { kind, value: value as Duration | EnvSetting };
  }

  if (kind === 'cron' && job['initialDelay'] !== undefined) fail(name, 'initialDelay', 'applies to fixedRate and fixedDelay only');
  const initialDelayMs = job['initialDelay'] === undefined ? 0 : checked(name, 'initialDelay', () => readDuration(job['initialDelay'], 'initialDelay', true));
  const timeoutMs = job['timeout'] === undefined ? undefined : checked(name, 'timeout', () => readDuration(job['timeout'], 'timeout'));
  if (scope !== 'installation') {
    if (job['lease'] !== undefined) fail(name, 'lease', 'applies to installation jobs only (scope: "installation")');
    if (job['misfireGrace'] !== undefined) fail(name, 'misfireGrace', 'applies to installation jobs only (scope: "installation")');
  }
  const leaseMs = job['lease'] === undefined ? DEFAULT_LEASE_MS : checked(name, 'lease', () => readDuration(job['lease'], 'lease'));
  if (leaseMs < 200) fail(name, 'lease', 'must be at least 200ms (it is extended every half lease)');
  const misfireGraceMs = job['misfireGrace'] === undefined ? undefined : checked(name, 'misfireGrace', () => readDuration(job['misfireGrace'], 'misfireGrace', true));

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
    resourceLimits,
    run: job['run'] as JobHandler,
  };
}
