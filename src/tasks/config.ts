/**
 * Executors' configuration: the kinds, their options and defaults, the environment variables
 * that tune one at deployment, and the set of a node's executors, which refuses a name nobody
 * configured (unless a catch-all entry `'*'` configures every other name).
 * @module
 */
import { availableParallelism } from 'node:os';
import { ErrorCodes, LeaseholdError, errorMessage, leaseholdError } from '../errors.js';
import { hasPeer, missingPeer } from '../peer.js';
import { describe, readDuration, type Duration } from '../schedule/duration.js';
import type { ExecutorKind } from '../schedule/submit.js';
import { readResourceLimits, type WorkerResourceLimits } from '../schedule/limits.js';
import { closest, distance } from 'fastest-levenshtein';
import { DEFAULT_EXECUTOR, EXECUTOR_NAME_PATTERN, normalizeTask } from './task.js';

/** One executor's configuration (`createRunner({ executors: { <name>: {...} } })`). */
export interface ExecutorConfig {
  /** `loop` (default), `worker` or `queue`. */
  readonly kind?: ExecutorKind;
  /** How many tasks run at once on this node. Default: 10 for `loop` and `queue`, the number of CPUs for `worker`. */
  readonly concurrency?: number;
  /** `loop` and `worker`: how many tasks may wait; over it `submit` rejects with `queueFull`. Default: no limit. */
  readonly queueLimit?: number;
  /** Abort a task after this long. Default 5m. */
  readonly timeout?: Duration;
  /** `queue`: how many times a task is tried in all. Default 1. */
  readonly attempts?: number;
  /** `queue`: the wait before the second attempt, doubled for each further one. Default 1s. */
  readonly backoff?: Duration;
  /** `queue`: how many failed tasks are kept (visible, retryable by hand). Default 1,000. */
  readonly keepFailed?: number;
  /** `queue`: how many completed tasks are kept (their results readable from any node). Default 1,000. */
  readonly keepCompleted?: number;
  /** `worker`: how long an idle thread is kept before it exits. Default 30s. */
  readonly idleTimeout?: Duration;
  /**
   * `worker`: limits of each thread (heap size, stack); a task whose thread reaches them fails
   * with code `workerOutOfMemory`, its thread is replaced, and the node goes on. Default: Node's
   * (see {@link WorkerResourceLimits}).
   */
  readonly resourceLimits?: WorkerResourceLimits;
  /**
   * `queue`: how long a node's claim on a running task lasts without being renewed: when a node
   * dies mid-task, its task runs again elsewhere this long after. Default 30s.
   */
  readonly lease?: Duration;
}

/** An executor's configuration, checked, with its defaults. */
export interface ResolvedExecutor {
  readonly name: string;
  readonly kind: ExecutorKind;
  readonly concurrency: number;
  readonly queueLimit: number;
  readonly timeoutMs: number;
  readonly attempts: number;
  readonly backoffMs: number;
  readonly keepFailed: number;
  readonly keepCompleted: number;
  readonly idleTimeoutMs: number;
  readonly leaseMs: number;
  /** `worker`: the threads' limits; undefined: Node's defaults. */
  readonly resourceLimits: WorkerResourceLimits | undefined;
}

/** The default timeout of a task. */
export const DEFAULT_TASK_TIMEOUT_MS = 5 * 60_000;

/**
 * The name of the catch-all entry of `executors`: the configuration of every executor that is
 * not configured by its own name. Without it, a task naming such an executor is refused.
 */
export const OTHER_EXECUTORS = '*';

const KEYS = new Set(['kind', 'concurrency', 'queueLimit', 'timeout', 'attempts', 'backoff', 'keepFailed', 'keepCompleted', 'idleTimeout', 'resourceLimits', 'lease']);

/** The variables that tune an executor at deployment, for the README's configuration table (`<NAME>`: its name in capitals, other characters as `_`). */
export const EXECUTOR_ENV_DOCS: readonly { readonly env: string; readonly default: string; readonly description: string }[] = [
  { env: 'LEASEHOLD_EXECUTOR_<NAME>_KIND', default: 'as configured, else `loop`', description: 'The kind of the executor `<name>`: `loop`, `worker` or `queue`, over what the code or the jobs module\'s `executors` export says; the fields the code gave that the new kind does not take (`queueLimit` for a queue, say) are ignored, with one warning naming them.' },
  { env: 'LEASEHOLD_EXECUTOR_<NAME>_CONCURRENCY', default: 'as configured, else 10 (`worker`: the CPUs)', description: 'How many tasks of the executor `<name>` run at once on this node.' },
  { env: 'LEASEHOLD_EXECUTOR_<NAME>_QUEUE_LIMIT', default: 'as configured, else none', description: 'How many tasks may wait on the loop or worker executor `<name>`; over it `submit` rejects with `queueFull`.' },
  { env: 'LEASEHOLD_EXECUTOR_<NAME>_MAX_HEAP_MB', default: 'as configured (`resourceLimits.maxOldGenerationSizeMb`), else Node\'s: the main thread\'s heap limit', description: 'The heap limit of each thread of the worker executor `<name>`, in MB; a task whose thread reaches it fails with `workerOutOfMemory` and the node goes on.' },
];

/** The environment variable that sets one option of the executor `name`: `LEASEHOLD_EXECUTOR_<NAME>_<OPTION>`. */
export function executorEnv(name: string, option: 'KIND' | 'CONCURRENCY' | 'QUEUE_LIMIT' | 'MAX_HEAP_MB'): string {
  return `LEASEHOLD_EXECUTOR_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${option}`;
}

/** The fields that apply to some kinds only, with the kinds they apply to and why not to others. */
const KIND_FIELDS: Readonly<Record<string, { readonly kinds: readonly ExecutorKind[]; readonly otherwise: string }>> = {
  queueLimit: { kinds: ['loop', 'worker'], otherwise: 'a queue executor keeps its queue in Redis, without a limit' },
  idleTimeout: { kinds: ['worker'], otherwise: 'applies to worker executors only (kind: "worker")' },
  resourceLimits: { kinds: ['worker'], otherwise: 'applies to worker executors only (kind: "worker")' },
  ...Object.fromEntries(['attempts', 'backoff', 'keepFailed', 'keepCompleted', 'lease'].map((f) => [f, { kinds: ['queue'], otherwise: 'applies to queue executors only (kind: "queue")' }])),
};

/** Fields of an executor's configuration that its kind, switched by a variable, does not take: ignored. */
export interface IgnoredExecutorFields {
  /** The executor. */
  readonly executor: string;
  /** The variable that switched its kind (`LEASEHOLD_EXECUTOR_<NAME>_KIND`). */
  readonly variable: string;
  /** The kind the code gave, and the kind the variable gave. */
  readonly from: ExecutorKind;
  readonly to: ExecutorKind;
  /** The fields ignored. */
  readonly ignored: readonly string[];
}

/** The warning of fields ignored because a variable switched the executor's kind: one line naming the variable and the fields. */
export function ignoredFieldsMessage(i: IgnoredExecutorFields): string {
  const fields = i.ignored.join(', ');
  return `executor "${i.executor}": ${i.variable}=${i.to} makes it a ${i.to} executor (the code says ${i.from}); ignoring ${fields}, which a ${i.to} executor does not take`;
}

/**
 * Checks an executor's configuration and fills in its defaults; the environment
 * (`LEASEHOLD_EXECUTOR_<NAME>_KIND`, `_CONCURRENCY`, `_QUEUE_LIMIT`, `_MAX_HEAP_MB`) overrides what the code says.
 * When the variable switches the kind, the fields the code gave that the new kind does not take
 * are ignored and handed to `onIgnored` (the node starts, as the deployment asked).
 * @throws LeaseholdError `invalidExecutor` naming the executor and the field.
 */
export function resolveExecutor(name: string, input: unknown, env: NodeJS.ProcessEnv = process.env, onIgnored?: (ignored: IgnoredExecutorFields) => void): ResolvedExecutor {
  if (name !== OTHER_EXECUTORS && !EXECUTOR_NAME_PATTERN.test(name)) throw new LeaseholdError(ErrorCodes.invalidExecutor, `executor ${describe(name)}: not an executor name (letters, digits, ".", "_", "-", ":")`);
  const bad = (field: string, message: string): never => {
    throw leaseholdError(ErrorCodes.invalidExecutor, { executor: JSON.stringify(name), field, problem: message });
  };
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) bad('config', `must be an object, got ${describe(input)}`);
  const o = { ...((input ?? {}) as Record<string, unknown>) };
  for (const key of Object.keys(o)) if (!KEYS.has(key)) bad(key, `unknown field (known: ${[...KEYS].join(', ')})`);
  const coded = o['kind'] ?? 'loop';
  /** The fields a variable gave: `LEASEHOLD_EXECUTOR_MAIL_QUEUE_LIMIT="100"`. */
  const given = new Map<string, string>();
  const fromEnv = (option: 'KIND' | 'CONCURRENCY' | 'QUEUE_LIMIT', field: string, numeric: boolean): void => {
    const raw = env[executorEnv(name, option)]?.trim();
    if (raw === undefined || raw === '') return;
    given.set(field, `${executorEnv(name, option)}=${raw}`);
    if (!numeric) o[field] = raw;
    else if (/^\d+$/.test(raw)) o[field] = Number(raw);
    else bad(field, `${executorEnv(name, option)}=${JSON.stringify(raw)} is not a whole number`);
  };
  fromEnv('KIND', 'kind', false);
  fromEnv('CONCURRENCY', 'concurrency', true);
  fromEnv('QUEUE_LIMIT', 'queueLimit', true);
  const heap = env[executorEnv(name, 'MAX_HEAP_MB')]?.trim();
  if (heap !== undefined && heap !== '') {
    const variable = `${executorEnv(name, 'MAX_HEAP_MB')}=${heap}`;
    given.set('resourceLimits', variable);
    if (!/^[1-9]\d*$/.test(heap)) bad('resourceLimits', `${variable}: not a whole number of MB above 0`);
    const coded = typeof o['resourceLimits'] === 'object' && o['resourceLimits'] !== null ? o['resourceLimits'] : {};
    o['resourceLimits'] = { ...coded, maxOldGenerationSizeMb: Number(heap) };
  }
  const kind = o['kind'] ?? 'loop';
  if (kind !== 'loop' && kind !== 'worker' && kind !== 'queue') bad('kind', `${describe(kind)} is not an executor kind (loop, worker or queue)`);
  const k = kind as ExecutorKind;
  const misfits = (): string[] => Object.keys(KIND_FIELDS).filter((f) => o[f] !== undefined && !KIND_FIELDS[f]?.kinds.includes(k));
  if (given.has('kind') && kind !== coded && (coded === 'loop' || coded === 'worker' || coded === 'queue')) {
    // The deployment switched the kind: what the code configured for the old kind does not apply.
    const ignored = misfits().filter((f) => !given.has(f));
    for (const f of ignored) delete o[f];
    if (ignored.length > 0) onIgnored?.({ executor: name, variable: executorEnv(name, 'KIND'), from: coded, to: k, ignored });
  }
  for (const f of misfits()) {
    const variable = given.get(f);
    bad(f, `${KIND_FIELDS[f]?.otherwise ?? ''}${variable === undefined ? '' : ` (set by ${variable})`}`);
  }
  const count = (field: string, dflt: number, max: number, min = 1): number => {
    const v = o[field];
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) return bad(field, `${describe(v)} must be a whole number from ${min} to ${max}`);
    return v;
  };
  const duration = (field: string, dflt: number, zero = false): number => {
    if (o[field] === undefined) return dflt;
    try {
      return readDuration(o[field], field, zero);
    } catch (err) {
      return bad(field, errorMessage(err));
    }
  };
  const limits = (): WorkerResourceLimits | undefined => {
    if (o['resourceLimits'] === undefined) return undefined;
    try {
      return readResourceLimits(o['resourceLimits']);
    } catch (err) {
      return bad('resourceLimits', errorMessage(err));
    }
  };
  return {
    name,
    kind: k,
    concurrency: count('concurrency', k === 'worker' ? Math.max(1, availableParallelism()) : 10, 10_000),
    queueLimit: count('queueLimit', Number.POSITIVE_INFINITY, 10_000_000, 0),
    timeoutMs: duration('timeout', DEFAULT_TASK_TIMEOUT_MS),
    attempts: count('attempts', 1, 100),
    backoffMs: duration('backoff', 1_000, true),
    keepFailed: count('keepFailed', 1_000, 1_000_000, 0),
    keepCompleted: count('keepCompleted', 1_000, 1_000_000, 0),
    idleTimeoutMs: duration('idleTimeout', 30_000),
    leaseMs: duration('lease', 30_000),
    resourceLimits: limits(),
  };
}

/** How far a name may be from a configured one to be suggested: a typo, not another word. */
function nearEnough(name: string, candidate: string): boolean {
  return distance(name.toLowerCase(), candidate.toLowerCase()) <= Math.max(2, Math.floor(name.length / 3));
}

/**
 * A node's executors as configured: those configured by name, the default executor (a `loop`
 * unless configured), and with a catch-all entry ({@link OTHER_EXECUTORS}) any other name.
 */
export class ExecutorSet {
  /** The executors resolved on first use: the default one, and any other through the catch-all. */
  private readonly others = new Map<string, ResolvedExecutor>();

  constructor(
    /** The executors configured by name. */
    readonly named: ReadonlyMap<string, ResolvedExecutor>,
    /** The catch-all entry, checked; undefined when there is none. */
    private readonly other: unknown,
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly onIgnored?: (ignored: IgnoredExecutorFields) => void,
  ) {}

  /** The configuration of the executor `name`, or undefined when it is not configured. */
  get(name: string): ResolvedExecutor | undefined {
    const configured = this.named.get(name) ?? this.others.get(name);
    if (configured) return configured;
    if (this.other === undefined && name !== DEFAULT_EXECUTOR) return undefined;
    const resolved = resolveExecutor(name, this.other, this.env, this.onIgnored);
    this.others.set(name, resolved);
    return resolved;
  }

  /**
   * The configuration of the executor the task `task` names.
   * @throws LeaseholdError `unknownExecutor` naming the configured executors and the closest.
   */
  of(name: string, task: string): ResolvedExecutor {
    const found = this.get(name);
    if (found) return found;
    const names = [...new Set([DEFAULT_EXECUTOR, ...this.named.keys()])].sort();
    const near = closest(name, names);
    throw leaseholdError(ErrorCodes.unknownExecutor, {
      task: JSON.stringify(task),
      executor: JSON.stringify(name),
      closest: nearEnough(name, near) ? ` (did you mean ${JSON.stringify(near)}?)` : '',
      configured: names.map((n) => JSON.stringify(n)).join(', '),
    });
  }
}

/**
 * Checks every executor of a configuration, so a wrong one stops a runner at its creation;
 * the catch-all entry `'*'` is checked too, and kept for the names it will configure.
 */
export function resolveExecutors(input: unknown, env: NodeJS.ProcessEnv = process.env, onIgnored?: (ignored: IgnoredExecutorFields) => void): ExecutorSet {
  const out = new Map<string, ResolvedExecutor>();
  if (input === undefined) return new ExecutorSet(out, undefined, env, onIgnored);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new LeaseholdError(ErrorCodes.invalidExecutor, `executors: must be an object of executors by name, got ${describe(input)}`);
  }
  let other: unknown;
  for (const [name, config] of Object.entries(input)) {
    if (name === OTHER_EXECUTORS) {
      // Checked now, without the environment: each name it configures reads its own variables.
      resolveExecutor(name, config, {});
      other = config ?? {};
    } else out.set(name, resolveExecutor(name, config, env, onIgnored));
  }
  return new ExecutorSet(out, other, env, onIgnored);
}

/** @throws LeaseholdError `missingPeer` for a queue executor without bullmq (an optional peer). */
export function checkExecutorPeer(config: ResolvedExecutor): void {
  if (config.kind === 'queue' && !hasPeer('bullmq')) throw missingPeer('bullmq', 'queue executors');
}

/**
 * Checks task definitions as adding them to a node would (each definition, its executor
 * configured and installed), for `leasehold check`: every error, not only the first.
 */
export function checkTaskDefinitions(executors: ExecutorSet, definitions: readonly unknown[]): LeaseholdError[] {
  const errors: LeaseholdError[] = [];
  for (const definition of definitions) {
    try {
      const task = normalizeTask(definition);
      checkExecutorPeer(executors.of(task.executor, task.id));
    } catch (err) {
      if (!(err instanceof LeaseholdError)) throw err;
      errors.push(err);
    }
  }
  return errors;
}
