/**
 * The executors' board in Redis (`<prefix>:executors`): each node that has used a loop or worker
 * executor writes its figures there every few seconds, so any node answers for the cluster.
 * Nothing is written, and no connection or timer exists, before the node's first executor.
 * @module
 */
import { every, waitAtMost, type Repeating, type Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { errorMessage } from '../errors.js';
import { keys } from '../redis/keys.js';
import { importPeer } from '../peer.js';
import { whenReady, type RedisClient } from '../redis/connection.js';
import type { ExecutorStats } from './executor.js';

/** How often a node writes its figures, ms. */
export const BOARD_EVERY_MS = 5_000;
/** A row older than this is a dead node's, ms: ignored, and removed by the reader. */
export const BOARD_STALE_MS = 15_000;
/** How long a stop waits for the removal of this node's row, in ms. */
const STOP_WAIT_MS = 500;

interface Row {
  readonly at: number;
  readonly executors: ExecutorStats[];
}

/** One node's side of the board. */
export class ExecutorBoard {
  private redis: RedisClient | undefined;
  private timer: Repeating | undefined;

  constructor(
    private readonly opts: {
      /** Makes the board's connection (a `stats` one), at its first use; its maker closes it. */
      connect: () => RedisClient;
      key: string;
      instanceId: string;
      clock: Timers;
      logger: Logger;
      rows: () => ExecutorStats[];
    },
  ) {}

  private connection(): RedisClient {
    this.redis ??= this.opts.connect();
    return this.redis;
  }

  /** Starts writing this node's figures (once; at the first executor). */
  start(): void {
    if (this.timer) return;
    this.timer = every(this.opts.clock, BOARD_EVERY_MS, () => void this.write(), 0);
  }

  /** Writes this node's figures now. */
  async write(): Promise<void> {
    const rows = this.opts.rows();
    if (rows.length === 0) return;
    const row: Row = { at: this.opts.clock.now(), executors: rows };
    await this.connection()
      .hset(this.opts.key, this.opts.instanceId, JSON.stringify(row))
      .catch((err: unknown) => this.opts.logger.debug({ err }, 'writing the executors board failed'));
  }

  /**
   * The cluster's executors: this node's rows (`own`) and every other live node's, with a queue
   * executor's rows made one, its counts read from its queue.
   */
  async read(own: ExecutorStats[], prefix: string): Promise<ExecutorStats[]> {
    const redis = this.connection();
    await whenReady(redis, 3_000);
    const { rows, stale } = await readBoard(redis, this.opts.key, this.opts.clock.now(), this.opts.instanceId);
    if (stale.length > 0) {
      await redis.hdel(this.opts.key, ...stale).catch((err: unknown) => this.opts.logger.debug({ error: errorMessage(err), rows: stale.length }, 'removing the executors rows of dead nodes failed; a later read removes them'));
    }
    return mergeQueues(redis, prefix, [...own, ...rows], (name, err) => this.opts.logger.debug({ error: errorMessage(err), executor: name }, 'reading the counts of queue "%s" failed; shown as 0', name));
  }

  /**
   * Stops writing and removes this node's row (the connection is closed by its maker), waiting
   * at most {@link STOP_WAIT_MS} for it: a stalled Redis does not hold the stop.
   */
  async stop(): Promise<void> {
    this.timer?.stop();
    const redis = this.redis;
    if (!redis || !this.timer) return;
    const removal = redis.hdel(this.opts.key, this.opts.instanceId).catch((err: unknown) => this.opts.logger.debug({ error: errorMessage(err) }, 'removing this node\'s executors row failed; readers ignore it once stale'));
    await waitAtMost(this.opts.clock, removal, STOP_WAIT_MS, true);
  }
}

/** The live rows of the board, and the fields of dead nodes (`except`: this node's own field). */
export async function readBoard(redis: RedisClient, key: string, now: number, except?: string): Promise<{ rows: ExecutorStats[]; stale: string[] }> {
  const all = await redis.hgetall(key);
  const rows: ExecutorStats[] = [];
  const stale: string[] = [];
  for (const [instance, text] of Object.entries(all)) {
    if (instance === except) continue;
    let row: Row | undefined;
    try {
      row = JSON.parse(text) as Row;
    } catch {
      row = undefined;
    }
    if (!row || typeof row.at !== 'number' || !Array.isArray(row.executors) || now - row.at > BOARD_STALE_MS) {
      stale.push(instance);
      continue;
    }
    rows.push(...row.executors);
  }
  return { rows, stale };
}

/**
 * Makes each queue executor's rows one: its counts (active, waiting, done, failed) read from its
 * queue, and the aborts each node counted (timedOut, cancelled, interrupted) summed. A queue
 * whose counts cannot be read shows zeros, and is told to `onCountsError`.
 */
export async function mergeQueues(redis: RedisClient, prefix: string, rows: ExecutorStats[], onCountsError: (queue: string, err: unknown) => void): Promise<ExecutorStats[]> {
  const out: ExecutorStats[] = rows.filter((r) => r.kind !== 'queue');
  const byName = new Map<string, ExecutorStats[]>();
  for (const r of rows) if (r.kind === 'queue') byName.set(r.name, [...(byName.get(r.name) ?? []), r]);
  // The queues that nodes submitted to and no live node has a row for (none consumes them, or
  // none is up): shown while they hold tasks, at concurrency 0.
  const setKey = keys(prefix).queues;
  const unconsumed = (await redis.smembers(setKey).catch((err: unknown) => void onCountsError(setKey, err))) ?? [];
  for (const name of unconsumed) if (!byName.has(name)) byName.set(name, []);
  // BullMQ (an optional peer) is loaded once, and only when there is a queue to read; without it
  // the counts are unreadable, said with the package to install. The queues are read together.
  const queues = [...byName];
  let loading: Promise<typeof import('./queue-counts.js')> | undefined;
  const counter = (): Promise<typeof import('./queue-counts.js')> => (loading ??= importPeer('bullmq', 'the counts of queue executors', () => import('./queue-counts.js')));
  const read = await Promise.all(queues.map(([name]) => counter()
    .then(({ queueCounts }) => queueCounts(redis, prefix, name))
    .catch((err: unknown) => void onCountsError(name, err))));
  for (const [i, [name, list]] of queues.entries()) {
    const counts = read[i];
    if (list.length === 0 && (counts === undefined || counts.active + counts.queued + counts.succeeded + counts.failed === 0)) continue;
    const sum = (f: 'timedOut' | 'cancelled' | 'interrupted'): number => list.reduce((n, r) => n + r[f], 0);
    const first = list[0];
    out.push({
      name,
      kind: 'queue',
      concurrency: first?.concurrency ?? 0,
      active: counts?.active ?? 0,
      queued: counts?.queued ?? 0,
      succeeded: counts?.succeeded ?? 0,
      failed: counts?.failed ?? 0,
      timedOut: sum('timedOut'),
      cancelled: sum('cancelled'),
      interrupted: sum('interrupted'),
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name) || (a.instanceId ?? '').localeCompare(b.instanceId ?? ''));
}
