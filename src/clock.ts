/**
 * Time, in one leaf module: the present moment, the monotonic clock and timers. Every other
 * module of leasehold reads time and arms timers through a {@link Clock}, so a test can drive
 * all of it; this file alone calls `Date.now()`, `performance.now()` and Node's timers.
 * @module
 */

/** No single timer waits longer than this; the clock is read again on wake, so sleep, suspend
 * and clock jumps cannot stall a timetable. */
export const MAX_TIMER_MS = 30_000;

/** An opaque timer handle. */
export type TimerHandle = unknown;

/**
 * The present moment and timers. Inject one to drive a runner in tests; any method left out
 * falls back to the system's.
 */
export interface Clock {
  /** Epoch milliseconds (the wall clock). */
  now(): number;
  /**
   * Milliseconds on a clock that only moves forward at a steady rate, for elapsed time and
   * deadlines. Defaults to `performance.now()`, or to `now()` for a clock that gives `now`
   * but no timers (a manual test clock then drives both).
   */
  monotonic?(): number;
  /**
   * Arms a one-shot timer; defaults to the global `setTimeout`. A `background` timer does not
   * keep the process alive on its own (Node's `unref`).
   */
  setTimer?(fn: () => void, ms: number, background?: boolean): TimerHandle;
  /** Clears a timer armed with `setTimer`. */
  clearTimer?(handle: TimerHandle): void;
}

/**
 * Runs `fn` at the next turn of the event loop, once pending I/O (sockets, replies) has been
 * handled. Not a timer: no time passes, so it is the same under any {@link Clock}.
 */
export function nextTurn(fn: () => void): void {
  setImmediate(fn);
}

/** A clock with every method: what leasehold's modules take. */
export type Timers = Required<Clock>;

function systemTimer(fn: () => void, ms: number, background = false): TimerHandle {
  const t = setTimeout(fn, ms);
  if (background) t.unref();
  return t;
}

/** The system clock with Node's timers. */
export const systemClock: Timers = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimer: systemTimer,
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The clocks {@link completeClock} made (and the system's): completing one again gives it back. */
const complete = new WeakSet<Clock>([systemClock]);

/**
 * Fills in what a clock leaves out (see {@link Clock}). A clock it made is returned as it is, so
 * parts handed the same completed clock share it without another layer of calls.
 */
export function completeClock(clock: Clock | undefined): Timers {
  if (!clock) return systemClock;
  if (complete.has(clock)) return clock as Timers;
  const manual = clock.setTimer !== undefined;
  const timers: Timers = {
    now: () => clock.now(),
    monotonic: clock.monotonic ? () => clock.monotonic?.() ?? 0 : manual ? () => clock.now() : systemClock.monotonic,
    setTimer: clock.setTimer ? (fn, ms, background) => clock.setTimer?.(fn, ms, background) : systemClock.setTimer,
    clearTimer: clock.clearTimer ? (h) => clock.clearTimer?.(h) : systemClock.clearTimer,
  };
  complete.add(timers);
  return timers;
}

/** Resolves after `ms` on `clock` (a background timer: it does not hold the process). */
export function sleep(clock: Timers, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(resolve, Math.max(0, ms), true));
}

/**
 * Resolves when `p` settles or `ms` have passed on `clock`, whichever comes first; the timer is
 * cleared either way (with `ms` <= 0 it resolves at once). A `background` timer does not keep
 * the process alive meanwhile.
 */
export function waitAtMost(clock: Timers, p: Promise<unknown>, ms: number, background = false): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  let handle: TimerHandle | undefined;
  const timeout = new Promise<void>((resolve) => {
    handle = clock.setTimer(resolve, Math.max(0, ms), background);
  });
  const settled = p.then(
    () => undefined,
    () => undefined,
  );
  return Promise.race([settled, timeout]).finally(() => clock.clearTimer(handle));
}

/** A repeating background timer, from {@link every}. */
export interface Repeating {
  /** Stops it; the callback is not called again. */
  stop(): void;
}

/**
 * Calls `fn` every `ms` on `clock` (first after `ms`, or after `firstMs` when given) until
 * `stop()`, on background timers.
 */
export function every(clock: Timers, ms: number, fn: () => void, firstMs = ms): Repeating {
  let stopped = false;
  let handle: TimerHandle | undefined;
  const arm = (wait: number): void => {
    handle = clock.setTimer(
      () => {
        if (stopped) return;
        arm(ms);
        fn();
      },
      wait,
      true,
    );
  };
  arm(firstMs);
  return {
    stop() {
      stopped = true;
      if (handle !== undefined) clock.clearTimer(handle);
    },
  };
}

/**
 * Races `p` against a deadline of `ms` on `clock`: rejects with `onTimeout()`'s error when no
 * answer came in time. The timer is cleared either way.
 */
export function withDeadline<T>(clock: Timers, p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let handle: TimerHandle | undefined;
  const timeout = new Promise<never>((_, reject) => {
    handle = clock.setTimer(() => reject(onTimeout()), ms, true);
  });
  return Promise.race([p, timeout]).finally(() => clock.clearTimer(handle));
}
