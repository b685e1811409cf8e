/**
 * The lease port without Redis: this node is the only one, and every tick is its own.
 * @module
 */
import type { Timers } from '../clock.js';
import type { Coordinator, HeldLease } from './port.js';

/** A coordinator for a single node without Redis: every claim succeeds once per tick. */
export function localCoordinator(clock: Timers): Coordinator {
  const state = new Map<string, { tick: number; due: number | undefined; held: boolean; fence: number }>();
  return {
    async claim({ jobId, tick, mode }) {
      const s = state.get(jobId) ?? { tick: -Infinity, due: undefined, held: false, fence: 0 };
      state.set(jobId, s);
      if (mode === 'pause') {
        if (s.tick >= tick) return { kind: 'done', lastTick: s.tick, counted: false };
        const previousTick = Number.isFinite(s.tick) ? s.tick : null;
        s.tick = tick;
        return { kind: 'paused', previousTick };
      }
      if (mode !== 'manual' && s.tick >= tick) return { kind: 'done', lastTick: s.tick, counted: false };
      if (mode === 'delay' && s.due !== undefined && tick < s.due) return { kind: 'notDue', dueMs: s.due };
      if (s.held) return { kind: 'held', holder: 'this node', value: 'this node', pttlMs: -1 };
      const previousTick = Number.isFinite(s.tick) ? s.tick : null;
      if (mode !== 'manual') s.tick = tick;
      s.held = true;
      s.fence += 1;
      const lease: HeldLease = {
        token: s.fence,
        watch: () => ({ stop() {}, check() {} }),
        release: async (delayMs, handBack) => {
          s.held = false;
          if (handBack && mode !== 'manual') s.tick = previousTick ?? -Infinity;
          if (delayMs !== undefined) s.due = clock.now() + delayMs;
          return true;
        },
      };
      return { kind: 'claimed', lease, token: s.fence, previousTick, serverNowMs: clock.now() };
    },
    afterClockStep(stepMs) {
      // The ticks were read off the old clock: on the new one they lie `stepMs` later.
      for (const s of state.values()) {
        s.tick += stepMs;
        if (s.due !== undefined) s.due += stepMs;
      }
    },
    close: async () => {},
  };
}
