/**
 * The clock the runner reads and arms its one timer on. Tests inject their own.
 * @module
 */

/** No single timer waits longer than this; the clock is read again on wake, so sleep, suspend
 * and clock jumps cannot stall a timetable. */
export const MAX_TIMER_MS = 30_000;

/** An opaque timer handle. */
export type TimerHandle = unknown;

/** The present moment and timers. Inject one to drive a runner in tests. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Arms a one-shot timer; defaults to the global `setTimeout`. */
  setTimer?(fn: () => void, ms: number): TimerHandle;
  /** Clears a timer armed with `setTimer`. */
  clearTimer?(handle: TimerHandle): void;
}

/** The system clock with Node's timers. */
export const systemClock: Required<Clock> = {
  now: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Fills in the timer functions a clock leaves out. */
export function completeClock(clock: Clock | undefined): Required<Clock> {
  if (!clock) return systemClock;
  return {
    now: () => clock.now(),
    setTimer: clock.setTimer ? (fn, ms) => clock.setTimer?.(fn, ms) : systemClock.setTimer,
    clearTimer: clock.clearTimer ? (h) => clock.clearTimer?.(h) : systemClock.clearTimer,
  };
}
