/**
 * Closing a Redis connection for good, bounded in time: QUIT, then a disconnect, and for a
 * Cluster a few more disconnects (see `disconnectAgain`).
 * @module
 */
import { Cluster } from 'ioredis';
import { systemClock, waitAtMost, type Timers } from '../clock.js';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from './connection.js';
import { redisAddress } from './problem.js';

/** How long a close waits for the answer to its QUIT before it disconnects all the same, in ms. */
export const QUIT_WAIT_MS = 500;

/**
 * Closes a connection for good: QUIT when it is ready (so replies in flight arrive), then a
 * disconnect, which also closes what ioredis keeps beside it (a Sentinel client's
 * subscriptions to the Sentinels, which QUIT alone leaves open and which would keep the
 * process alive). Bounded and never throws: a QUIT that fails (the connection dropped under
 * it) or that Redis does not answer within `quitWaitMs` (a stalled server) is told to
 * `onQuitError`, once, and the connection is closed all the same.
 */
export async function closeRedis(conn: RedisClient, onQuitError: (err: unknown) => void, quitWaitMs = QUIT_WAIT_MS, clock: Timers = systemClock): Promise<void> {
  if (conn.status === 'ready') {
    let told = false;
    const tell = (err: unknown): void => {
      if (told) return;
      told = true;
      onQuitError(err);
    };
    // The QUIT in flight is rejected by the disconnect below when Redis never answered it.
    const quit = conn.quit().then(() => void (told = true), tell);
    await waitAtMost(clock, quit, quitWaitMs, true);
    tell(new LeaseholdError(ErrorCodes.redisError, `Redis at ${redisAddress(conn)} did not answer QUIT within ${quitWaitMs} ms`));
  }
  conn.disconnect();
  if (conn instanceof Cluster) disconnectAgain(conn);
}

/** How often, and how many times, a closed Cluster is disconnected again (see {@link disconnectAgain}). */
const AGAIN_EVERY_MS = 1_000;
const AGAIN_TIMES = 5;

/**
 * ioredis (5.11) re-arms a Cluster's slots-refresh timer whenever a refresh ends, also one
 * that was under way at `quit()` or `disconnect()`: that timer then refreshes an empty pool and
 * re-arms itself every `slotsRefreshInterval` forever, keeping the process alive. A refresh
 * under way ends within `slotsRefreshTimeout` (1 s) of the close; disconnecting again, on
 * background timers, clears the timer it re-armed.
 */
function disconnectAgain(cluster: Cluster, times = AGAIN_TIMES): void {
  if (times <= 0) return;
  systemClock.setTimer(
    () => {
      cluster.disconnect();
      disconnectAgain(cluster, times - 1);
    },
    AGAIN_EVERY_MS,
    true,
  );
}
