/**
 * This node's clock offset to Redis server time. Lease and tick decisions are
 * made on Redis time inside the scripts; the offset serves to wake a node's
 * timer close to the ticks Redis will accept, and to report clock skew.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from './connection.js';
import { systemClock, type Clock as RunnerClock } from '../clock.js';

/** A source of the present moment in epoch ms (the runner's clock will do). */
export type Clock = Pick<RunnerClock, 'now'>;

/** The result of {@link measureOffset}. */
export interface ClockOffset {
  /** Redis time ≈ `clock.now() + offsetMs`. */
  offsetMs: number;
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
  let best = await sample(redis, clock);
  for (let i = 1; i < OFFSET_SAMPLES; i++) {
    const next = await sample(redis, clock);
    if (next.rttMs < best.rttMs) best = next;
  }
  return best;
}

async function sample(redis: RedisClient, clock: Clock): Promise<ClockOffset> {
  const sentAt = clock.now();
  let reply: unknown;
  try {
    reply = await redis.time();
  } catch (err) {
    throw new LeaseholdError(ErrorCodes.redisError, `Redis TIME failed: ${(err as Error).message}`, { cause: err });
  }
  const receivedAt = clock.now();
  return { offsetMs: timeReplyMs(reply) - (sentAt + receivedAt) / 2, rttMs: Math.max(0, receivedAt - sentAt) };
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
