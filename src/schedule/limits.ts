/**
 * The limits of a worker thread's JavaScript engine (`resourceLimits`, Node's `worker_threads`
 * option of that name), which a worker executor and a job with `thread: 'worker'` take: a
 * thread that reaches them is ended alone, its task or run recorded `failed` with code
 * `workerOutOfMemory`, and the node goes on.
 * @module
 */
import { describe } from './duration.js';

/**
 * Limits of a worker thread (Node's `resourceLimits` of `worker_threads`). Each one left out
 * keeps Node's default: the heap of a thread may grow as large as the main thread's (V8 sizes
 * it from the machine's memory, or from `--max-old-space-size`), and its stack is 4 MB. Set
 * `maxOldGenerationSizeMb` so that the threads and the main thread together fit the memory of
 * the container.
 */
export interface WorkerResourceLimits {
  /** The most the thread's main heap may grow to, in MB. Default: Node's, the main thread's heap limit. */
  readonly maxOldGenerationSizeMb?: number;
  /** The most the heap space for young objects may take, in MB. Default: Node's, from the heap limit. */
  readonly maxYoungGenerationSizeMb?: number;
  /** The memory set aside for compiled code, in MB. Default: Node's. */
  readonly codeRangeSizeMb?: number;
  /** The thread's stack, in MB. Default: Node's, 4. */
  readonly stackSizeMb?: number;
}

const LIMIT_KEYS = ['maxOldGenerationSizeMb', 'maxYoungGenerationSizeMb', 'codeRangeSizeMb', 'stackSizeMb'] as const;

/** The largest limit taken, in MB (1 TB): more is a mistake in units. */
const MAX_MB = 1_048_576;

/**
 * Checks a `resourceLimits` value; the limits given, as a plain object.
 * @throws Error saying what is wrong (the caller names the job or the executor and the field).
 */
export function readResourceLimits(value: unknown): WorkerResourceLimits {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${describe(value)} must be an object of limits in MB (${LIMIT_KEYS.join(', ')})`);
  const out: Record<string, number> = {};
  for (const [key, limit] of Object.entries(value)) {
    if (!(LIMIT_KEYS as readonly string[]).includes(key)) throw new Error(`unknown limit "${key}" (known: ${LIMIT_KEYS.join(', ')})`);
    if (limit === undefined) continue;
    if (typeof limit !== 'number' || !Number.isFinite(limit) || limit <= 0 || limit > MAX_MB) throw new Error(`${key}: ${describe(limit)} must be a number of MB above 0, at most ${MAX_MB}`);
    out[key] = limit;
  }
  return out;
}

/** A key for a set of limits: threads with the same limits share a pool. */
export function limitsKey(limits: WorkerResourceLimits | undefined): string {
  return limits === undefined ? '' : LIMIT_KEYS.map((k) => String(limits[k] ?? '')).join(',');
}
