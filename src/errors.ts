/**
 * The one error class leasehold throws, with a stable `code` per kind of failure, and the one
 * list of those codes ({@link ERRORS}): what each means, what to do about it, the exit status
 * of the CLI and the HTTP status of the routes that answer with it, and the message's template
 * where it has a fixed shape. {@link ErrorCodes}, the {@link ErrorCode} union and the error
 * reference's table are made from that list, so a code's meaning is written once.
 *
 * Every code is a camelCase string, the casing of the run outcomes and abort reasons a user
 * already reads (`lockLost`, `timedOut`), and each key of {@link ErrorCodes} is spelled
 * exactly as its value (`ErrorCodes.invalidCron === 'invalidCron'`): the name in the code, in
 * `err.code`, in a log line and in the error reference (docs/reference/errors.md) is one string, and a search for
 * it finds every place. The abort reasons are a subset of the codes, taken from
 * {@link ErrorCodes} rather than written out again.
 * @module
 */

/** One entry of {@link ERRORS}. */
export interface ErrorDescription {
  /** What went wrong. */
  readonly meaning: string;
  /** What the user or operator does about it. */
  readonly action: string;
  /** The message, where it has a fixed shape: `{name}` marks a value the caller gives (see {@link leaseholdError}). */
  readonly message?: string;
  /** The status the HTTP routes answer with when a request meets this error. */
  readonly http?: number;
  /** The exit status of the `leasehold` command that stops on this error; 1 when not given. */
  readonly exit?: number;
  /** For a code split from coarser ones: the codes these cases carried before. */
  readonly was?: readonly string[];
}

/**
 * Every code a {@link LeaseholdError} can carry, each with its description, in the order of the
 * error reference's table. Codes are stable: each names one kind of failure and is never reused
 * for another, nor removed.
 */
export const ERRORS = {
  invalidCron: {
    meaning: 'A cron expression is malformed; the message names the field at fault.',
    action: 'Fix that field (six fields, seconds first); `leasehold next "<expr>"` prints the fire times of an expression that parses.',
    message: 'Invalid cron expression {expression}: {problem}',
    exit: 2,
  },
  invalidZone: {
    meaning: 'A zone is neither an IANA zone id, a fixed offset like `+02:00`, nor `UTC`.',
    action: 'Use an IANA id (`Europe/Berlin`), an offset or `UTC`; leasehold never falls back to UTC silently.',
    message: 'Invalid zone {zone}: {problem}',
    exit: 2,
  },
  invalidDuration: {
    meaning: 'A duration is neither a number of milliseconds nor a string like `10s`, or is out of range.',
    action: 'Give milliseconds or `500ms`, `10s`, `5m`, `1h`, `1d`: more than zero (zero allowed for a delay), at most 24 days.',
  },
  invalidJob: {
    meaning: 'A job definition is wrong; the message names the job and the field.',
    action: 'Fix the field named; `leasehold check <module>` runs the same checks in CI.',
    message: 'job {job}: field "{field}": {problem}',
  },
  duplicateJob: {
    meaning: 'Two jobs share an id.',
    action: 'Give each job its own id.',
    message: 'job {job}: field "id": another job has the same id',
  },
  invalidDecorator: {
    meaning: '`@Scheduled` or `@Async` (or `@Cron`, `@Interval`, `@Timeout` of `leasehold/nestjs`) is used where it cannot work (not on a public instance method, two schedules or both decorators on one method, a scheduled method with more than one parameter, a schedule on a request-scoped or transient Nest provider), or `register` is given no instance of a decorated class or a malformed namespace.',
    action: 'Fix the class or method named: decorators on public instance methods, one `@Scheduled` per method taking the run context only; register an instance (`runner.register(new Jobs())`); in Nest, schedule methods of singleton providers.',
    was: ['invalidJob', 'invalidTask'],
  },
  invalidConfig: {
    meaning: 'A runner option, flag or environment variable is wrong, or the node cannot start with it (its HTTP port is taken, the private `redis-server` does not start).',
    action: 'Fix the option, flag or variable the message names (see [Configuration](./configuration.md)).',
    exit: 2,
  },
  invalidRedisTarget: {
    meaning: 'Where Redis is cannot be read: a Redis URL or node list is malformed, or the Redis settings contradict each other (two of them given, Sentinels without the master\'s name).',
    action: 'Give one of `REDIS_URL`, `REDIS_CLUSTER_NODES` or `REDIS_SENTINELS` with `REDIS_SENTINEL_NAME` (or the runner option of the same name) in the form the message shows; a password is never shown.',
    exit: 2,
    was: ['invalidConfig'],
  },
  invalidToken: {
    meaning: 'An admin, read or metrics token (or the read cookie\'s secret) is too short to resist guessing (fewer than 16 characters) or cannot be carried by an `Authorization: Bearer` header; the message names the setting, never the value.',
    action: 'Use at least 16 characters of printable ASCII without spaces, such as `openssl rand -hex 32`.',
    message: '{setting}: {problem} (the value is not shown)',
    exit: 2,
    was: ['invalidConfig'],
  },
  invalidModule: {
    meaning: 'A jobs module could not be loaded or does not export an array of jobs.',
    action: 'Check the path, that the module loads on its own, and that its default export is an array of jobs.',
  },
  invalidState: {
    meaning: 'A call that the state of the runner (or of the object called) does not allow.',
    action: 'Fix the calling code: `start()` runs once, `add()` and `addTask()` before `stop()`, an `@Async` method is called once its instance is registered.',
  },
  redisRequired: {
    meaning: 'A runner without Redis was asked for what lives in Redis: the job status (`runner.status()`), a queue executor, or an installation job (which runs once per tick for every node that shares a Redis; without one, every replica would run it).',
    action: 'Give the runner Redis (`redisUrl`, `redisClusterNodes`, `redisSentinels` or `redis`; `REDIS_URL` for `leasehold start`), or use a loop or worker executor. For an installation job on a node that runs alone, say so: `local: true` (`leasehold start --local`), or try it with `leasehold start --private-redis`.',
    message: '{what} needs Redis, and this runner has none: configure redisUrl, redisClusterNodes, redisSentinels or redis (REDIS_URL for leasehold start){alternative}',
    was: ['invalidState', 'invalidTask'],
  },
  timeout: {
    meaning: 'A run outlived its timeout (an abort reason).',
    action: 'Stop the handler when `ctx.signal` aborts, or give the job a longer `timeout`; the run is recorded `timedOut`.',
  },
  lockLost: {
    meaning: 'A run\'s lease could not be extended or was taken, so another node may run the job (an abort reason).',
    action: 'Stop writing when `ctx.signal` aborts; keep blocking or CPU-heavy work off the event loop, check Redis latency, or give the job a longer `lease`.',
  },
  shutdown: {
    meaning: 'The node is shutting down and the shutdown grace has passed (an abort reason).',
    action: 'Stop the handler when `ctx.signal` aborts; the run is recorded `interrupted`. A longer shutdown grace (`shutdownGrace`, `LEASEHOLD_SHUTDOWN_GRACE`) lets runs finish.',
  },
  cancelled: {
    meaning: 'An operator cancelled the run (an abort reason).',
    action: 'Stop the handler when `ctx.signal` aborts; the run is recorded `cancelled`, and the job runs again at its next tick.',
  },
  redisError: {
    meaning: 'Redis refused a command, failed, or did not answer in time.',
    action: 'Check that Redis is reachable and healthy; a claim that fails is a `failed` run.',
    http: 503,
  },
  corruptState: {
    meaning: 'A key leasehold keeps for a job holds a value of the wrong type (something else wrote it: a `SET` on the wrong key, another program sharing the prefix). Only that job is affected: its claims fail (a `failed` run), or its stats cannot be written (a batch that cannot apply is dropped after a few tries and counted in `leasehold_stats_batches_dropped_total`); the other jobs run and count on.',
    action: 'Delete the key the message names (`redis-cli DEL <key>`: what it held starts afresh), or run `leasehold forget <jobId>` once no node runs the job.',
    message: '{key} holds a {found} where leasehold keeps a {want} (something else wrote it); repair: delete that key (redis-cli DEL), or run leasehold forget {job} once no node runs the job',
  },
  corruptSettings: {
    meaning: 'The settings hash (`<prefix>:settings`) holds a value of the wrong type, so operator overrides can be neither read nor written: a pause or a schedule override does not apply, and the nodes keep the last settings they read.',
    action: 'Look at the key (`redis-cli TYPE <key>`), delete it (`redis-cli DEL <key>`) and set again the overrides you need; the nodes read it again at once.',
    message: '{key} holds a {found} where leasehold keeps the settings hash (something else wrote it): pauses and overrides can be neither read nor written; repair: delete that key (redis-cli DEL), then set the overrides again',
    http: 500,
  },
  invalidTask: {
    meaning: 'A task definition or a submission is wrong; the message names the task and the field or option.',
    action: 'Fix the field or option named: `attempts` and `backoff` apply to queue executors, a worker executor\'s task gives its `module`, and `ctx.submit` works in jobs and tasks on the event loop.',
    message: 'task {task}: field "{field}": {problem}',
  },
  duplicateTask: {
    meaning: 'Two tasks share an id (two task definitions, or two `@Async` methods).',
    action: 'Give each task its own id (`@Async({ id })` for a method).',
    message: 'task {task}: field "id": another task has the same id',
    was: ['invalidTask'],
  },
  invalidPayload: {
    meaning: 'A submitted payload cannot reach its task: it cannot be structured-cloned for a worker executor, or serialised as JSON for a queue executor.',
    action: 'Submit plain data (no functions, sockets or class instances with methods; no `BigInt` for a queue executor); the message names the task, the executor and what could not be copied.',
    message: 'task {task} on {kind} executor {executor}: its payload cannot be {how}: {problem}',
    was: ['invalidTask'],
  },
  invalidExecutor: {
    meaning: 'An executor\'s configuration is wrong: the runner\'s `executors`, a jobs module\'s `executors` export, or a `LEASEHOLD_EXECUTOR_<NAME>_*` variable; the message names the executor and the field.',
    action: 'Fix the field or variable named (see [Background tasks](../guide/background-tasks.md)).',
    message: 'executor {executor}: field "{field}": {problem}',
    was: ['invalidTask'],
  },
  unknownExecutor: {
    meaning: 'A task (a task definition, or an `@Async` method) names an executor that is not configured: neither in the runner\'s `executors` nor in a jobs module\'s `executors` export, and there is no catch-all entry `\'*\'`.',
    action: 'Fix the name (the message names the configured executors and the closest), configure the executor, or add an entry `\'*\': {}` that every other name runs on (a `loop`, as before this check).',
    message: 'task {task}: field "executor": executor {executor} is not configured{closest}; configured: {configured}',
  },
  queueFull: {
    meaning: 'A task was submitted to an executor whose queue is at its limit.',
    action: 'Submit again later, raise the executor\'s `queueLimit` or `concurrency`, or move the work to a queue executor.',
    message: 'executor {executor}: task {task} not accepted, {queued} tasks wait already (queueLimit {limit})',
  },
  unknownTask: {
    meaning: 'A task ran on a node (or a task or job in a worker thread) where no task of that id is registered or exported: in a thread, neither a task or job its `module` exports nor a decorated method of that name on an instance it exports (or two such methods could be the one meant).',
    action: 'Register the task on the nodes that consume its executor (`runner.addTask`), or export it from its `module` (for a decorated method, an instance of its class; an explicit `id` when the module exports two that could be meant); a queue task is kept in the failed set.',
  },
  workerFailed: {
    meaning: 'A worker thread failed before it answered: the handler ended the thread (`process.exit`), or its result cannot be copied back.',
    action: 'Keep the handler from exiting its thread, and return structured-cloneable results; the run or task is recorded `failed`.',
    message: '{kind} {id} on worker executor {executor}: the worker thread failed: {problem}',
    was: ['invalidTask'],
  },
  missingPeer: {
    meaning: 'An optional part of leasehold needs a package the project has not installed (queue executors need bullmq, the MCP tools the MCP SDK, pretty logs pino-pretty, `.ts` jobs modules tsx where Node cannot strip types).',
    action: 'Install the package named, at the version the message gives; `npm install leasehold` leaves these out to keep the install small.',
    message: '{purpose} need {name}: npm install {install}',
    exit: 2,
  },
  workerOutOfMemory: {
    meaning: 'A worker thread reached its memory limits (its `resourceLimits`, or Node\'s defaults) and was ended; the node and its other threads go on, and the next task or run gets a new thread.',
    action: 'Bound what the handler keeps in memory (stream, or split the work), or raise `resourceLimits.maxOldGenerationSizeMb` of the executor or the job; the run or task is recorded `failed`.',
    message: '{kind} {id} on worker executor {executor}: the worker thread ran out of memory under {limits}; the thread was ended, the node goes on',
    was: ['workerFailed'],
  },
  invalidQuery: {
    meaning: 'A request for jobs is malformed (a `limit`, `cursor`, `state` or `q` that cannot be read), or asks for the whole list of an installation too large for one answer.',
    action: 'Fix the parameter named; above 5,000 jobs ask for pages: `GET /manage/jobs?limit=100`, then `&cursor=` with the `nextCursor` of each page.',
    http: 400,
    exit: 2,
  },
} as const satisfies { readonly [code: string]: ErrorDescription };

/** Each code as its own value: `ErrorCodes.x === 'x'`, for every code of {@link ERRORS}. */
function codesOf<T extends object>(list: T): { readonly [C in keyof T]: C } {
  return Object.freeze(Object.fromEntries(Object.keys(list).map((code) => [code, code]))) as { readonly [C in keyof T]: C };
}

/**
 * Every code a {@link LeaseholdError} can carry, each spelled as its key. Codes are stable:
 * each names one kind of failure and is never reused for another. The error reference's table
 * says what each means and what to do about it.
 */
export const ErrorCodes = codesOf(ERRORS);

/** A stable error code; see {@link ErrorCodes}. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** The codes a run's `AbortSignal` reason can carry: a subset of {@link ErrorCodes}. */
export const AbortReasonCodes = [ErrorCodes.timeout, ErrorCodes.lockLost, ErrorCodes.shutdown, ErrorCodes.cancelled] as const satisfies readonly ErrorCode[];

/** The reasons a run's `AbortSignal` can carry; see {@link AbortReasonCodes}. */
export type AbortReasonCode = (typeof AbortReasonCodes)[number];

/** The names in a template: `'job {job}: {problem}'` gives `'job' | 'problem'`. */
type Slots<T extends string> = T extends `${string}{${infer Name}}${infer Rest}` ? Name | Slots<Rest> : never;

/** The codes whose message has a template. */
export type TemplatedCode = { [C in ErrorCode]: (typeof ERRORS)[C] extends { readonly message: string } ? C : never }[ErrorCode];

/** The values a code's template takes, by name. */
export type MessageValues<C extends TemplatedCode> = { readonly [N in Slots<(typeof ERRORS)[C]['message']>]: string | number };

/** A `{name}` in a template. */
const SLOT = /\{(\w+)\}/g;

/**
 * The error of a code whose message has a fixed shape, its template filled with `values`, so
 * the same mistake reads the same wherever it is made.
 */
export function leaseholdError<C extends TemplatedCode>(code: C, values: MessageValues<C>, options?: { cause?: unknown }): LeaseholdError {
  const given = values as Readonly<Record<string, string | number>>;
  const message = ERRORS[code].message.replace(SLOT, (_, name: string) => String(given[name]));
  return new LeaseholdError(code, message, options);
}

/** The exit status of the `leasehold` command that stops on `err`: the code's, or 1. */
export function exitStatus(err: unknown): number {
  const entry: ErrorDescription | undefined = isLeaseholdError(err) ? ERRORS[err.code] : undefined;
  return entry?.exit ?? 1;
}

/** The error reference's table (docs/reference/errors.md), rendered from {@link ERRORS}. */
export function renderErrorTable(): string {
  const rows = Object.entries(ERRORS).map(([code, entry]: [string, ErrorDescription]) => {
    const was = entry.was ? ` New: these cases were ${entry.was.map((c) => `\`${c}\``).join(' or ')} before.` : '';
    const statuses = [entry.http === undefined ? '' : `HTTP ${entry.http}`, entry.exit === undefined ? '' : `exit ${entry.exit}`].filter((s) => s !== '').join(', ');
    return `| \`${code}\` | ${entry.meaning}${was} | ${entry.action} | ${statuses} |`;
  });
  return ['| code | meaning | what to do | status |', '|---|---|---|---|', ...rows].join('\n');
}

/**
 * The only error class leasehold throws. `code` is stable; `message` names the input and the
 * field at fault.
 */
export class LeaseholdError extends Error {
  /** What kind of failure this is. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LeaseholdError';
    this.code = code;
  }
}

/** True when `err` is a {@link LeaseholdError}, optionally with the given code. */
export function isLeaseholdError(err: unknown, code?: ErrorCode): err is LeaseholdError {
  return err instanceof LeaseholdError && (code === undefined || err.code === code);
}

/** The message of a thrown value, whatever was thrown (for logs and outcomes). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
