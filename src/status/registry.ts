/**
 * The registry: the set of job ids (`<prefix>:jobs`) and this node's heartbeat
 * (`<prefix>:instance:<id>`, a hash with a TTL, and its score in `<prefix>:instances`).
 * With the job ids, the set of this node's digest (`<prefix>:registered:<digest>`): which jobs the
 * live nodes register. A node that dies stops refreshing and its heartbeat expires; `stop()`
 * removes it (and its digest) at once, so a job it alone had is orphaned right after.
 * Each heartbeat also reads `<prefix>:epoch`, set once by the first node (`SET NX`): when it is
 * another than the one this node saw, Redis lost leasehold's data in between (restarted without
 * persistence, failed over to a replica without it, flushed), and the node says so once.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import type { Keys } from '../redis/keys.js';
import { pipelined } from '../redis/pipeline.js';
import { iso } from './batch.js';
import { PRUNE_EVERY_MS, pruneInstanceRows } from './prune.js';
import { errorMessage } from '../errors.js';
import { every, systemClock, waitAtMost, type Repeating, type Timers } from '../clock.js';

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
/**
 * The set of a digest's job ids (`<prefix>:registered:<digest>`), written with the job ids,
 * expires this long after, in ms: a few refreshes, so a set of a live node never lapses.
 */
const REGISTERED_TTL_MS = 3 * JOBS_REFRESH_MS;

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
  /** A read of the live nodes after a change heard on the control channel is due. */
  private rereading = false;
  /** This node has said on the control channel that it joined. */
  private announced = false;
  /** The value of `<prefix>:epoch` this node last read. */
  private epoch: string | undefined;

  constructor(private readonly opts: RegistryOptions) {
    // On the clock's own time: the shared clock is not measured yet (and is the same until it is).
    this.startedAt = iso((opts.clock ?? systemClock).now());
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

  /**
   * Another node stopped or started (it said so on the control channel): the live nodes are read
   * now. A beat under way may have read them before the change: one more after it, and one for
   * any number of changes heard meanwhile.
   */
  nodesChanged(): void {
    if (this.stopped || !this.heartbeat || this.rereading) return;
    this.rereading = true;
    void (this.beating ?? Promise.resolve()).then(() => {
      this.rereading = false;
      return this.stopped ? undefined : this.beat();
    });
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
        // A new value each time: one this node wrote before must not pass for the one it saw.
        { key: keys.epoch, queue: (p) => p.set(keys.epoch, `${iso(now)} ${instanceId} ${randomBytes(6).toString('hex')}`, 'NX').get(keys.epoch) },
        ...(ids.length > 0
          ? [
              { key: keys.jobs, queue: (p: ChainableCommander) => p.sadd(keys.jobs, ...ids) },
              // What this node registers, for the status: a job in no live node's set is orphaned.
              { key: keys.registered(this.digest), queue: (p: ChainableCommander) => p.sadd(keys.registered(this.digest), ...ids).pexpire(keys.registered(this.digest), REGISTERED_TTL_MS) },
            ]
          : []),
      ]);
      const failed = replies.find(([err]) => err);
      if (failed?.[0]) throw failed[0];
      this.seePeers(replies[4]?.[1], replies[6]?.[1]);
      this.seeEpoch(replies[8]?.[1]);
      if (!this.announced) {
        // After the first heartbeat is written: the others that read the live nodes now see this one.
        this.announced = true;
        redis.publish(keys.control, JSON.stringify({ type: 'joined', instanceId })).catch((err: unknown) => this.opts.logger.debug({ error: errorMessage(err) }, 'saying on the control channel that this node joined failed: the others see it at their next heartbeat'));
      }
      if (this.failing) this.opts.logger.debug('heartbeat written again');
      this.failing = false;
      if (sendIds) this.idsSentAt = now;
    } catch (err) {
      if (!this.failing) this.opts.logger.debug({ error: errorMessage(err) }, 'heartbeat not written; retrying');
      this.failing = true;
      this.idsSentAt = -Infinity;
    }
  }

  /** Says once that Redis lost its data when the epoch read is another than the one seen before. */
  private seeEpoch(read: unknown): void {
    if (typeof read !== 'string') return;
    const seen = this.epoch;
    this.epoch = read;
    if (seen === undefined || seen === read) return;
    const { keys } = this.opts;
    this.opts.logger.error(
      { epoch: read, before: seen },
      'Redis lost its data: %s is not the one this node saw before (Redis restarted without persistence, failed over to a replica without the data, or was flushed). The fencing tokens of installation jobs start again from 1, the pauses and schedules set in %s are gone, and the counters start again from 0; a resource that keeps the highest token it saw refuses the new ones until they pass it',
      keys.epoch,
      keys.settings,
    );
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
    peers.sort();
    if (peers.join() !== this.livePeers.join()) this.opts.logger.debug({ nodes: peers }, 'the live nodes that run these jobs: %s', peers.join(', '));
    this.livePeers = peers;
    if (gone.length > 0) {
      redis.hdel(keys.nodes, ...gone).catch((err: unknown) => this.opts.logger.debug({ error: errorMessage(err), nodes: gone.length }, 'forgetting the digests of nodes no longer live failed; retried with the next heartbeat'));
    }
  }

  /**
   * Stops beating, removes this node's heartbeat (best effort: it expires anyway) and tells the
   * other nodes on the control channel, so they stop ranking it at once, waiting
   * at most `timeoutMs` for a heartbeat under way and the removal: a stalled Redis does not
   * hold the stop (the removal is abandoned when the connection closes).
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    this.heartbeat?.stop();
    this.pruning?.stop();
    const clock = this.opts.clock ?? systemClock;
    const deadline = clock.monotonic() + timeoutMs;
    if (this.beating) await waitAtMost(clock, this.beating, timeoutMs / 2, true);
    const { redis, keys, instanceId } = this.opts;
    if (redis.status !== 'ready') return;
    // In this order on one connection: the others hear of it once it is gone from the live nodes.
    const left = JSON.stringify({ type: 'left', instanceId });
    const removal = Promise.all([redis.del(keys.instance(instanceId)), redis.zrem(keys.instances, instanceId), redis.hdel(keys.nodes, instanceId), redis.publish(keys.control, left)]).then(
      () => undefined,
      (err: unknown) => this.opts.logger.debug({ error: errorMessage(err) }, 'removing the heartbeat failed; it expires on its own'),
    );
    await waitAtMost(clock, removal, deadline - clock.monotonic(), true);
  }
}
