/**
 * The registry: the set of job ids (`<prefix>:jobs`) and this node's heartbeat
 * (`<prefix>:instance:<id>`, a hash with a TTL, and its score in `<prefix>:instances`).
 * A node that dies stops refreshing and its heartbeat expires; `stop()` removes it at once.
 * @module
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import type { Keys } from '../redis/keys.js';
import { pipelined } from '../redis/pipeline.js';
import { iso } from './batch.js';
import { PRUNE_EVERY_MS, pruneInstanceRows } from './prune.js';
import { errorMessage } from '../errors.js';
import { every, systemClock, type Repeating, type Timers } from '../clock.js';

/** The heartbeat is refreshed this often, in ms. */
const HEARTBEAT_MS = 5_000;
/** The heartbeat hash expires this long after its last refresh, in ms. */
const HEARTBEAT_TTL_MS = 15_000;
/** Members of the instances set not seen for this long are removed, in ms. */
const INSTANCE_FORGET_MS = 60_000;
/**
 * The job ids are added to the job set with the first heartbeat, after a job is added, after a
 * failed heartbeat or a reconnection, and again this often (in case the set was deleted), in ms:
 * not with every heartbeat, which for a node of thousands of jobs is thousands of members.
 */
const JOBS_REFRESH_MS = 60_000;

/** Options of {@link Registry}. */
export interface RegistryOptions {
  /** A `stats` connection. */
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly instanceId: string;
  /** leasehold's version, shown in the instance list. */
  readonly version: string;
  readonly logger: Logger;
  /** The shared clock (ms). */
  readonly now: () => number;
  /** The ids of this node's jobs. */
  readonly jobIds: () => string[];
  /** The ids of this node's instance jobs (whose rows of gone instances it prunes). */
  readonly instanceJobIds: () => string[];
  /** Called on each periodic beat: other periodic work rides on its wake-up. */
  readonly onBeat?: () => void;
  /** Timers; default the system's. */
  readonly clock?: Timers;
}

/** Registers jobs and keeps this node's heartbeat; see the module comment. */
export class Registry {
  private readonly startedAt: string;
  private heartbeat: Repeating | undefined;
  private pruning: Repeating | undefined;
  private beating: Promise<void> | undefined;
  private stopped = false;
  private failing = false;
  /** This node's job ids as last read, and whether they must be read and sent again. */
  private ids: string[] = [];
  private idsDirty = true;
  private idsSentAt = -Infinity;
  private digest = '';
  private livePeers: readonly string[];

  constructor(private readonly opts: RegistryOptions) {
    this.startedAt = iso(opts.now());
    this.livePeers = [opts.instanceId];
    // A new connection may be to a Redis that lost its data (restarted, failed over): send the ids again.
    opts.redis.on('ready', () => {
      this.idsSentAt = -Infinity;
    });
  }

  /** Beats now and every {@link HEARTBEAT_MS}. Never throws: a failed beat is retried by the next. */
  async start(): Promise<void> {
    await this.beat();
    const clock = this.opts.clock ?? systemClock;
    this.heartbeat = every(clock, HEARTBEAT_MS, () => {
      void this.beat();
      this.opts.onBeat?.();
    });
    // The first prune at a random point of the interval, so nodes started together do not prune together.
    this.pruning = every(clock, PRUNE_EVERY_MS, () => void this.prune(), Math.floor(Math.random() * PRUNE_EVERY_MS));
  }

  /** Removes the per-instance rows of instances gone for long; never throws. */
  async prune(): Promise<number> {
    const { redis, keys } = this.opts;
    if (redis.status !== 'ready') return 0;
    try {
      const removed = await pruneInstanceRows(redis, keys, this.opts.instanceJobIds(), this.opts.now());
      if (removed > 0) this.opts.logger.debug({ removed }, 'forgot the per-instance rows of instances gone for long');
      return removed;
    } catch (err) {
      this.opts.logger.debug({ error: errorMessage(err) }, 'pruning per-instance rows failed; trying again later');
      return 0;
    }
  }

  /**
   * The live nodes that run the same jobs as this one (the same digest), this one included,
   * sorted; as of the last heartbeat (every {@link HEARTBEAT_MS}). Before the first, this one alone.
   */
  peers(): readonly string[] {
    return this.livePeers;
  }

  /** This node's jobs changed (one added or removed): its job ids are sent again soon. */
  jobsChanged(): void {
    this.idsDirty = true;
    if (!this.stopped && this.heartbeat) void this.beat();
  }

  /** One heartbeat (one pipeline): instance hash with TTL, last-seen score, stale members dropped, job ids. */
  beat(): Promise<void> {
    this.beating ??= this.doBeat().finally(() => {
      this.beating = undefined;
    });
    return this.beating;
  }

  private async doBeat(): Promise<void> {
    const { redis, keys, instanceId } = this.opts;
    if (redis.status !== 'ready') return;
    const now = this.opts.now();
    const key = keys.instance(instanceId);
    const sendIds = this.idsDirty || now - this.idsSentAt >= JOBS_REFRESH_MS;
    if (this.idsDirty) {
      this.ids = this.opts.jobIds();
      this.digest = createHash('sha1').update([...this.ids].sort().join('\n')).digest('hex').slice(0, 12);
      this.idsDirty = false;
    }
    const ids = sendIds ? this.ids : [];
    const fields = {
      id: instanceId,
      host: hostname(),
      pid: String(process.pid),
      version: this.opts.version,
      startedAt: this.startedAt,
      lastSeenAt: iso(now),
      jobs: String(this.ids.length),
    };
    try {
      // One pipeline; on a Cluster one per key, as the three keys live in different slots.
      const replies = await pipelined(redis, [
        { key, queue: (p) => p.hset(key, fields).pexpire(key, HEARTBEAT_TTL_MS) },
        {
          key: keys.instances,
          queue: (p) => p.zadd(keys.instances, now, instanceId).zremrangebyscore(keys.instances, '-inf', now - INSTANCE_FORGET_MS).zrangebyscore(keys.instances, now - HEARTBEAT_TTL_MS, '+inf'),
        },
        { key: keys.nodes, queue: (p) => p.hset(keys.nodes, instanceId, this.digest).hgetall(keys.nodes) },
        ...(ids.length > 0 ? [{ key: keys.jobs, queue: (p: ChainableCommander) => p.sadd(keys.jobs, ...ids) }] : []),
      ]);
      const failed = replies.find(([err]) => err);
      if (failed?.[0]) throw failed[0];
      this.seePeers(replies[4]?.[1], replies[6]?.[1]);
      if (this.failing) this.opts.logger.debug('heartbeat written again');
      this.failing = false;
      if (sendIds) this.idsSentAt = now;
    } catch (err) {
      if (!this.failing) this.opts.logger.debug({ error: errorMessage(err) }, 'heartbeat not written; retrying');
      this.failing = true;
      this.idsSentAt = -Infinity;
    }
  }

  /** Keeps the live nodes with this node's digest; forgets the digests of nodes no longer live. */
  private seePeers(live: unknown, digests: unknown): void {
    const { redis, keys, instanceId } = this.opts;
    const alive = new Set(Array.isArray(live) ? live.filter((id): id is string => typeof id === 'string') : []);
    const byNode = digests !== null && typeof digests === 'object' ? (digests as Record<string, string>) : {};
    const peers = [instanceId];
    const gone: string[] = [];
    for (const [id, digest] of Object.entries(byNode)) {
      if (!alive.has(id)) gone.push(id);
      else if (id !== instanceId && digest === this.digest) peers.push(id);
    }
    this.livePeers = peers.sort();
    if (gone.length > 0) void redis.hdel(keys.nodes, ...gone).catch(() => undefined);
  }

  /** Stops beating and removes this node's heartbeat (best effort: it expires anyway). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.heartbeat?.stop();
    this.pruning?.stop();
    await this.beating;
    const { redis, keys, instanceId } = this.opts;
    if (redis.status !== 'ready') return;
    try {
      await Promise.all([redis.del(keys.instance(instanceId)), redis.zrem(keys.instances, instanceId), redis.hdel(keys.nodes, instanceId)]);
    } catch (err) {
      this.opts.logger.debug({ error: errorMessage(err) }, 'removing the heartbeat failed; it expires on its own');
    }
  }
}
