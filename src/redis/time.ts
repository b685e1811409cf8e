/**
 * This node's clock offset to Redis server time. Lease and tick decisions are
 * made on Redis time inside the scripts; the offset serves to wake a node's
 * timer close to the ticks Redis will accept, and to report clock skew.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from './connection.js';
import { systemClock, type Clock as RunnerClock } from '../clock.js';

/** A source of the present moment in epoch ms and, optionally, of monotonic time (the runner's clock will do). */
export type Clock = Pick<RunnerClock, 'now' | 'monotonic'>;

/** A sample whose wall and monotonic times moved apart by more than this saw a step of the wall clock, ms. */
const STEPPED_SAMPLE_MS = 50;

/** The result of {@link measureOffset}. */
export interface ClockOffset {
  /** Redis time ≈ `clock.now() + offsetMs`. */
  offsetMs: number;
  /**
   * Redis time ≈ `clock.monotonic() + monotonicOffsetMs` (`clock.now()` when the clock has no
   * monotonic time): a reading of Redis time that a step of the wall clock does not move.
   */
  monotonicOffsetMs: number;
  /** Round trip of the sample the offset comes from, ms; the error is at most half of it. */
  rttMs: number;
}

/** Number of TIME samples taken by {@link measureOffset}. */
export const OFFSET_SAMPLES = 5;

/**
 * Measure the offset of Redis server time to `clock` with a few `TIME` calls,
 * keeping the sample with the smallest round trip and placing Redis's answer
 * at its midpoint. Throws `redisError` when Redis fails.
 */
export async function measureOffset(redis: RedisClient, clock: Clock = systemClock): Promise<ClockOffset> {
  let best: ClockOffset | undefined;
  for (let i = 0; i < OFFSET_SAMPLES; i++) {
    const next = await sample(redis, clock);
    if (next && (!best || next.rttMs < best.rttMs)) best = next;
  }
  // Every sample saw a step (the wall clock stepping again and again): one more, as it is.
  return best ?? (await sample(redis, clock, true)) ?? { offsetMs: 0, monotonicOffsetMs: 0, rttMs: Infinity };
}

/** One TIME round trip; undefined when the wall clock stepped during it (unless `anyway`). */
async function sample(redis: RedisClient, clock: Clock, anyway = false): Promise<ClockOffset | undefined> {
  const mono = (): number => (clock.monotonic ? clock.monotonic() : clock.now());
  const sentAt = clock.now();
  const sentMono = mono();
  let reply: unknown;
  try {
    reply = await redis.time();
  } catch (err) {
    throw new LeaseholdError(ErrorCodes.redisError, `Redis TIME failed: ${(err as Error).message}`, { cause: err });
  }
  const receivedAt = clock.now();
  const receivedMono = mono();
  if (!anyway && Math.abs(receivedAt - sentAt - (receivedMono - sentMono)) > STEPPED_SAMPLE_MS) return undefined;
  const redisMs = timeReplyMs(reply);
  return { offsetMs: redisMs - (sentAt + receivedAt) / 2, monotonicOffsetMs: redisMs - (sentMono + receivedMono) / 2, rttMs: Math.max(0, receivedMono - sentMono) };
}

function timeReplyMs(reply: unknown): number {
  if (Array.isArray(reply) && reply.length === 2) {
    const [seconds, micros] = reply.map(Number);
    if (Number.isFinite(seconds) && Number.isFinite(micros)) {
      return (seconds as number) * 1000 + (micros as number) / 1000;
    }
  }
  throw new LeaseholdError(ErrorCodes.redisError, `unexpected reply to Redis TIME: ${JSON.stringify(reply)}`);
}
