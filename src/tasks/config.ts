/**
 * Executors' configuration: the kinds, their options, the documented defaults of an executor
 * used but not configured, and the environment variables that tune one at deployment.
 * @module
 */
import { availableParallelism } from 'node:os';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { describe, parseDuration, type Duration } from '../schedule/duration.js';
import { EXECUTOR_NAME_PATTERN } from './task.js';

/** The kinds of executor. */
export const ExecutorKinds = { loop: 'loop', worker: 'worker', queue: 'queue' } as const;
/** `loop` (the event loop), `worker` (worker threads) or `queue` (a durable BullMQ queue). */
export type ExecutorKind = (typeof ExecutorKinds)[keyof typeof ExecutorKinds];

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
}

/** The default timeout of a task. */
export const DEFAULT_TASK_TIMEOUT_MS = 5 * 60_000;

const KEYS = new Set(['kind', 'concurrency', 'queueLimit', 'timeout', 'attempts', 'backoff', 'keepFailed', 'keepCompleted', 'idleTimeout', 'lease']);

/** The variables that tune an executor at deployment, for the README's configuration table (`<NAME>`: its name in capitals, other characters as `_`). */
export const EXECUTOR_ENV_DOCS: readonly { readonly env: string; readonly default: string; readonly description: string }[] = [
  { env: 'LEASEHOLD_EXECUTOR_<NAME>_KIND', default: 'as configured, else `loop`', description: 'The kind of the executor `<name>`: `loop`, `worker` or `queue` (over what the code or the jobs module\'s `executors` export says).' },
  { env: 'LEASEHOLD_EXECUTOR_<NAME>_CONCURRENCY', default: 'as configured, else 10 (`worker`: the CPUs)', description: 'How many tasks of the executor `<name>` run at once on this node.' },
  { env: 'LEASEHOLD_EXECUTOR_<NAME>_QUEUE_LIMIT', default: 'as configured, else none', description: 'How many tasks may wait on the loop or worker executor `<name>`; over it `submit` rejects with `queueFull`.' },
];

/** The environment variable that sets one option of the executor `name`: `LEASEHOLD_EXECUTOR_<NAME>_<OPTION>`. */
export function executorEnv(name: string, option: 'KIND' | 'CONCURRENCY' | 'QUEUE_LIMIT'): string {
  return `LEASEHOLD_EXECUTOR_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${option}`;
}

/**
 * Checks an executor's configuration and fills in its defaults; the environment
 * (`LEASEHOLD_EXECUTOR_<NAME>_KIND`, `_CONCURRENCY`, `_QUEUE_LIMIT`) overrides what the code says.
 * @throws LeaseholdError `invalidTask` naming the executor and the field.
 */
export function resolveExecutor(name: string, input: unknown, env: NodeJS.ProcessEnv = process.env): ResolvedExecutor {
  if (!EXECUTOR_NAME_PATTERN.test(name)) throw new LeaseholdError(ErrorCodes.invalidTask, `executor ${describe(name)}: not an executor name (letters, digits, ".", "_", "-", ":")`);
  const label = `executor ${JSON.stringify(name)}`;
  const bad = (field: string, message: string): never => {
    throw new LeaseholdError(ErrorCodes.invalidTask, `${label}: field "${field}": ${message}`);
  };
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) bad('config', `must be an object, got ${describe(input)}`);
  const o = { ...((input ?? {}) as Record<string, unknown>) };
  for (const key of Object.keys(o)) if (!KEYS.has(key)) bad(key, `unknown field (known: ${[...KEYS].join(', ')})`);
  const fromEnv = (option: 'KIND' | 'CONCURRENCY' | 'QUEUE_LIMIT', field: string, numeric: boolean): void => {
    const raw = env[executorEnv(name, option)]?.trim();
    if (raw === undefined || raw === '') return;
    if (!numeric) o[field] = raw;
    else if (/^\d+$/.test(raw)) o[field] = Number(raw);
    else bad(field, `${executorEnv(name, option)}=${JSON.stringify(raw)} is not a whole number`);
  };
  fromEnv('KIND', 'kind', false);
  fromEnv('CONCURRENCY', 'concurrency', true);
  fromEnv('QUEUE_LIMIT', 'queueLimit', true);
  const kind = o['kind'] ?? 'loop';
  if (kind !== 'loop' && kind !== 'worker' && kind !== 'queue') bad('kind', `${describe(kind)} is not an executor kind (loop, worker or queue)`);
  const count = (field: string, dflt: number, max: number, min = 1): number => {
    const v = o[field];
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) return bad(field, `${describe(v)} must be a whole number from ${min} to ${max}`);
    return v;
  };
  const duration = (field: string, dflt: number, zero = false): number => {
    if (o[field] === undefined) return dflt;
    try {
      return parseDuration(o[field], field, zero);
    } catch (err) {
      return bad(field, errorMessage(err));
    }
  };
  const k = kind as ExecutorKind;
  if (k !== 'queue') for (const f of ['attempts', 'backoff', 'keepFailed', 'keepCompleted', 'lease']) if (o[f] !== undefined) bad(f, `applies to queue executors only (kind: "queue")`);
  if (k === 'queue' && o['queueLimit'] !== undefined) bad('queueLimit', 'a queue executor keeps its queue in Redis, without a limit');
  if (k !== 'worker' && o['idleTimeout'] !== undefined) bad('idleTimeout', 'applies to worker executors only (kind: "worker")');
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
  };
}

/** Checks every executor of a configuration, so a wrong one stops a runner at its creation. */
export function resolveExecutors(input: unknown, env: NodeJS.ProcessEnv = process.env): Map<string, ResolvedExecutor> {
  const out = new Map<string, ResolvedExecutor>();
  if (input === undefined) return out;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new LeaseholdError(ErrorCodes.invalidTask, `executors: must be an object of executors by name, got ${describe(input)}`);
  }
  for (const [name, config] of Object.entries(input)) out.set(name, resolveExecutor(name, config, env));
  return out;
}
