/**
 * Missed ticks: how many ticks of a grid schedule lie strictly between the last tick some
 * node claimed and the one claimed now. Pure.
 * @module
 */
import type { Trigger } from '../schedule/trigger.js';

/** Missed cron ticks are counted one by one up to this many; a longer gap is estimated. */
const MISSED_WALK_LIMIT = 1_000;

/**
 * The grid ticks of `trigger` strictly between `previousTick` and `tick` (0 for fixedDelay,
 * which has no grid). fixedRate is exact however long the gap; a cron gap longer than
 * {@link MISSED_WALK_LIMIT} ticks (a per-second cron down for hours) is not walked tick by tick
 * on the event loop: the rest is estimated from the spacing of the ticks walked so far.
 */
export function countMissedTicks(trigger: Trigger, previousTick: number, tick: number): number {
  if (trigger.kind === 'fixedDelay' || previousTick >= tick) return 0;
  if (trigger.kind === 'fixedRate') {
    const first = trigger.next(previousTick) ?? tick;
    return first >= tick ? 0 : Math.ceil((tick - first) / trigger.intervalMs);
  }
  let count = 0;
  let t = trigger.next(previousTick);
  while (t !== null && t < tick && count < MISSED_WALK_LIMIT) {
    count++;
    t = trigger.next(t);
  }
  if (t !== null && t < tick && count > 0) count += Math.ceil((tick - t) / ((t - previousTick) / (count + 1)));
  return count;
}
