/**
 * The Redis coordinator: installation claims through the lease store, on Redis time.
 * @module
 */
import { systemClock, type TimerHandle, type Timers } from '../clock.js';
import { closeRedis, type RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import type { Coordinator, ClaimResult, HeldLease, LeaseLoss, LeaseWatchHandle } from './port.js';
import type { Keys } from '../redis/keys.js';
import { measureOffset } from '../redis/time.js';
import { CLAIM_ANSWER_WINDOW_MS, CLAIM_LEAD_MS, createLeaseStore, type Lease } from './lease.js';
import { watchLease } from './watcher.js';

/** How often the offset to Redis time is measured again. */
export const OFFSET_INTERVAL_MS = 60_000;

/** Options of {@link redisCoordinator}. */
export interface RedisCoordinatorOptions {
  /** A fail-fast `lease` connection, owned by the coordinator once given. */
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly instanceId: string;
  readonly logger: Logger;
  /** Close the connection on `close()`. */
  readonly ownsConnection: boolean;
  /** The clock of the runner it serves (offsets to Redis time, lease deadlines, timers); default the system's. */
  readonly clock?: Timers;
  /** Length of each job's recent-runs list (a claim pushes the lost runs it finds there). */
  readonly recentRuns?: number | undefined;
}

/** A coordinator that also measures its offset to Redis time. */
export interface RedisCoordinator extends Coordinator {
  /** Measures the offset now and then every minute. Does not throw when Redis is away. */
  start(): Promise<void>;
}

/** Creates the Redis coordinator. */
export function redisCoordinator(opts: RedisCoordinatorOptions): RedisCoordinator {
  const clock = opts.clock ?? systemClock;
  // Redis time ≈ monotonic + offset. Until the first measurement, the wall clock's reading.
  let offset = clock.now() - clock.monotonic();
  let wallOffset = 0;
  // Claims carry an answer time only once the offset is measured: off a wall clock seconds slow,
  // it would be past on Redis before the claim was sent, and every claim would be refused.
  let measured = false;
  let timer: TimerHandle | undefined;
  let closed = false;
  let remeasuring: Promise<void> | undefined;

  const now = (): number => Math.floor(clock.monotonic() + offset);
  const store = createLeaseStore(opts.redis, opts.keys, {
    clock,
    answerBy: () => (measured ? now() + CLAIM_ANSWER_WINDOW_MS : undefined),
    // Claims refused as late, answered at once: the offset is wrong (Redis failed over to a
    // server whose clock is off the old one's). It is measured again now, not within the minute.
    onRefusedInTime: () => {
      if (closed || remeasuring) return;
      opts.logger.info('Redis refused claims as late though it answered at once: measuring the offset to Redis time again');
      remeasuring = measure().finally(() => {
        remeasuring = undefined;
      });
    },
    ...(opts.recentRuns === undefined ? {} : { runsCap: opts.recentRuns }),
  });

  const measure = async (): Promise<void> => {
    try {
      const m = await measureOffset(opts.redis, clock);
      if (Math.abs(m.offsetMs - wallOffset) > 250) {
        opts.logger.info({ offsetMs: Math.round(m.offsetMs), rttMs: m.rttMs }, 'this node\'s clock is %d ms off Redis time; scheduling on Redis time', Math.round(-m.offsetMs));
      }
      wallOffset = m.offsetMs;
      offset = m.monotonicOffsetMs;
      measured = true;
    } catch (err) {
      opts.logger.debug({ err }, 'measuring the offset to Redis time failed; keeping the last one');
    }
  };

  return {
    async start() {
      await measure();
      const loop = (): void => {
        timer = clock.setTimer(() => {
          void measure().finally(() => {
            if (!closed) loop();
          });
        }, OFFSET_INTERVAL_MS, true);
      };
      loop();
    },
    now,
    claimLeadMs: CLAIM_LEAD_MS,
    flush: () => store.flush(),
    async claim(request): Promise<ClaimResult> {
      const r = await store.claim({ ...request, holder: opts.instanceId });
      return r.kind === 'claimed' ? { ...r, lease: new Held(r.lease, clock) } : r;
    },
    async close() {
      closed = true;
      if (timer !== undefined) clock.clearTimer(timer);
      if (opts.ownsConnection) {
        await closeRedis(opts.redis, (err) => opts.logger.debug({ err }, 'closing the lease connection: QUIT failed; disconnected'));
      }
    },
  };
}

/** A lease as the runner holds it, watched on the coordinator's clock. */
class Held implements HeldLease {
  readonly #lease: Lease;
  readonly #clock: Timers;
  readonly token: number;

  constructor(lease: Lease, clock: Timers) {
    this.#lease = lease;
    this.#clock = clock;
    this.token = lease.token;
  }

  watch(leaseMs: number, onLost: (loss: LeaseLoss) => void): LeaseWatchHandle {
    return watchLease(this.#lease, { leaseMs, onLost, clock: this.#clock });
  }

  release(delayMs: number | undefined, handBack = false): Promise<boolean> {
    return this.#lease.release(delayMs ?? -1, handBack);
  }
}
