/**
 * What the harness and its worker processes say to each other over the IPC channel, and
 * the configuration a worker is started with. Runs are not reported here: each worker
 * appends them to its own file, so neither Redis nor the channel carries them.
 * @module
 */

/**
 * The systems compared (`node-cron`: node-cron 4's `distributed: true` with a Redis run
 * coordinator), and `croner-alone`: one process, no coordination, the floor of S1's and S3's lateness.
 */
export const SYSTEMS = ['leasehold', 'bullmq', 'croner-redlock', 'node-cron', 'croner-alone'] as const;
/** One of {@link SYSTEMS}. */
export type SystemName = (typeof SYSTEMS)[number];
/** The reference that is not a peer: it runs in S1 and S3 only, in one process. */
export const FLOOR: SystemName = 'croner-alone';

/** How long every job body sleeps after recording its start, in ms. */
export const BODY_MS = 20;

/** A worker's configuration, passed as JSON in the `BENCH_WORKER` environment variable. */
export interface WorkerConfig {
  readonly system: SystemName;
  /** 0-based index of this process in its group. */
  readonly index: number;
  readonly redisUrl: string;
  /** Key prefix (or queue name) of this run. */
  readonly prefix: string;
  /** Number of jobs. */
  readonly jobs: number;
  /** Six-field cron, seconds first. */
  readonly cron: string;
  /** The cron's period in ms (every schedule here is a fixed grid). */
  readonly periodMs: number;
  /** Lease, lock or stalled-job time in ms. */
  readonly leaseMs: number;
  /** File the worker appends its runs to; empty to record nothing. */
  readonly recordFile: string;
  /** Whether this process creates the shared schedule (bullmq job schedulers). */
  readonly setup: boolean;
}

/** Counters a worker keeps about its own Redis clients. */
export interface ClientCounts {
  /** Commands sent, each command of a pipeline or transaction counted. */
  commands: number;
  /** Writes to Redis: a command alone, or a whole pipeline, counts once. */
  batches: number;
  /** Commands sent, by lower-case name. */
  byName: Record<string, number>;
}

/** A worker's answer to a snapshot request. */
export interface Snapshot {
  /** Process CPU (user + system) since start, µs. */
  readonly cpuUs: number;
  readonly rssBytes: number;
  readonly clients: ClientCounts;
  /** System-specific counters (claims lost, locks refused, ...). */
  readonly extra: Readonly<Record<string, number>>;
  /** This process's recording clock minus `Date.now()`, ms (a sanity check). */
  readonly clockDriftMs: number;
}

/** Harness to worker. */
export type ToWorker = { readonly type: 'snapshot'; readonly seq: number } | { readonly type: 'stop' };

/** Worker to harness. */
export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'snapshot'; readonly seq: number; readonly snapshot: Snapshot }
  | { readonly type: 'failed'; readonly message: string };

/** Whether `m` looks like a {@link FromWorker} message. */
export function isFromWorker(m: unknown): m is FromWorker {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string';
}

/** Whether `m` looks like a {@link ToWorker} message. */
export function isToWorker(m: unknown): m is ToWorker {
  const type = typeof m === 'object' && m !== null ? (m as { type?: unknown }).type : undefined;
  return type === 'snapshot' || type === 'stop';
}

/** The id of job `i`, the same in every system. */
export function jobId(i: number): string {
  return `job-${String(i).padStart(5, '0')}`;
}
