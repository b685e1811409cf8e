/**
 * The Redis coordinator: installation claims through the lease store, on Redis time.
 * @module
 */
import { systemClock, type TimerHandle, type Timers } from '../clock.js';
import { closeRedis, type RedisClient } from '../redis/connection.js';
import type { Logger } from '../logger.js';
import { ErrorCodes, errorMessage, isLeaseholdError } from '../errors.js';
import type { Coordinator, ClaimResult, HeldLease, LeaseLoss, LeaseWatchHandle } from './port.js';
import type { Keys } from '../redis/keys.js';
import { measureOffset } from '../redis/time.js';
import { CLAIM_ANSWER_WINDOW_MS, CLAIM_LEAD_MS, createLeaseStore, type Lease } from './lease.js';
import { watchLease } from './watcher.js';

/** How often the offset to Redis time is measured again. */
export const OFFSET_INTERVAL_MS = 60_000;

/**
 * How long after a release that Redis did not answer (unreachable, stalled, failing over) it
 * is sent again, ms; again and again until the lease would have expired. The release is fenced
 * by the lease's value, so one that comes after another node took the lease changes nothing.
 */
export const RELEASE_RETRY_MS = 500;

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
  const retries = new Set<TimerHandle>();

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

  /**
   * Sends a release that Redis did not answer again every {@link RELEASE_RETRY_MS} until it
   * is answered or the lease has surely expired (`leaseMs` after the failure, however recently
   * it was extended), so the job is free for its next tick once Redis answers again rather than
   * when the lease runs out. A fixedDelay job's delay counts from the first try.
   */
  const retryRelease = (lease: Lease, leaseMs: number, delayMs: number, handBack: boolean): void => {
    const failedAt = clock.monotonic();
    const what = `the lease of job ${lease.jobId} (token ${lease.token})`;
    const schedule = (): void => {
      const timer = clock.setTimer(() => {
        retries.delete(timer);
        const elapsed = clock.monotonic() - failedAt;
        lease.release(delayMs < 0 ? -1 : Math.max(0, Math.round(delayMs - elapsed)), handBack).then(
          (ours) => {
            if (ours) opts.logger.info({ jobId: lease.jobId, token: lease.token, afterMs: Math.round(elapsed) }, 'released %s once Redis answered again, %d ms after its release first failed', what, Math.round(elapsed));
            else opts.logger.debug({ jobId: lease.jobId, token: lease.token }, 'releasing %s again: it had expired or been taken over already', what);
          },
          (err: unknown) => {
            if (closed) return;
            const redisDown = isLeaseholdError(err) && err.code === ErrorCodes.redisError;
            if (redisDown && clock.monotonic() - failedAt + RELEASE_RETRY_MS < leaseMs) schedule();
            else opts.logger.info({ jobId: lease.jobId, token: lease.token }, 'stopped trying to release %s: %s', what, redisDown ? 'it has expired by now' : errorMessage(err));
          },
        );
      }, RELEASE_RETRY_MS, true);
      retries.add(timer);
    };
    schedule();
  };

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
      return r.kind === 'claimed' ? { ...r, lease: new Held(r.lease, clock, request.leaseMs, retryRelease) } : r;
    },
    async close() {
      closed = true;
      if (timer !== undefined) clock.clearTimer(timer);
      // Releases still being tried are left to expire: the connection closes now.
      for (const retry of retries) clock.clearTimer(retry);
      retries.clear();
      if (opts.ownsConnection) {
        await closeRedis(opts.redis, (err) => opts.logger.debug({ err }, 'closing the lease connection: QUIT failed; disconnected'));
      }
    },
  };
}

/** Sends a release that Redis did not answer again until it is answered or the lease has expired. */
type RetryRelease = (lease: Lease, leaseMs: number, delayMs: number, handBack: boolean) => void;

/** A lease as the runner holds it, watched on the coordinator's clock. */
class Held implements HeldLease {
  readonly #lease: Lease;
  readonly #clock: Timers;
  readonly #retry: RetryRelease;
  /** The longest time to live the lease was claimed or extended with, ms. */
  #leaseMs: number;
  readonly token: number;

  constructor(lease: Lease, clock: Timers, leaseMs: number, retry: RetryRelease) {
    this.#lease = lease;
    this.#clock = clock;
    this.#leaseMs = leaseMs;
    this.#retry = retry;
    this.token = lease.token;
  }

  watch(leaseMs: number, onLost: (loss: LeaseLoss) => void): LeaseWatchHandle {
    this.#leaseMs = Math.max(this.#leaseMs, leaseMs);
    return watchLease(this.#lease, { leaseMs, onLost, clock: this.#clock });
  }

  async release(delayMs: number | undefined, handBack = false): Promise<boolean> {
    try {
      return await this.#lease.release(delayMs ?? -1, handBack);
    } catch (err) {
      if (isLeaseholdError(err) && err.code === ErrorCodes.redisError) this.#retry(this.#lease, this.#leaseMs, delayMs ?? -1, handBack);
      throw err;
    }
  }
}
