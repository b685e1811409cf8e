/**
 * A manual clock for timetable tests: time moves only when the test advances it.
 */
import type { Clock } from '../../src/clock.js';

interface Pending {
  at: number;
  id: number;
  fn: () => void;
}

/** Lets pending promise callbacks and immediates run. */
export async function flush(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/** A clock whose time and timers move only on `advance`. */
export class ManualClock implements Required<Clock> {
  private t: number;
  private seq = 0;
  private pending: Pending[] = [];

  constructor(start: number | string) {
    this.t = typeof start === 'number' ? start : Date.parse(start);
  }

  now(): number {
    return this.t;
  }

  monotonic(): number {
    return this.t;
  }

  setTimer(fn: () => void, ms: number): unknown {
    const p = { at: this.t + Math.max(0, ms), id: ++this.seq, fn };
    this.pending.push(p);
    return p.id;
  }

  clearTimer(handle: unknown): void {
    this.pending = this.pending.filter((p) => p.id !== handle);
  }

  /** Moves time forward by `ms`, firing due timers in order and letting promises settle. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await flush();
    for (;;) {
      this.pending.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.pending[0];
      if (!next || next.at > target) break;
      this.pending.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
      await flush();
    }
    this.t = target;
    await flush();
  }

  /** How many timers are armed (the runner keeps one). */
  get armed(): number {
    return this.pending.length;
  }
}

/** A promise with its resolve and reject exposed. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
