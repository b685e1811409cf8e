/**
 * The time a node plans with: Redis's when the coordinator keeps a shared clock, else the
 * wall clock, read with the check for a step of the wall clock against the monotonic one.
 * @module
 */
import type { Timers } from '../clock.js';
import type { Coordinator } from '../lease/port.js';
import type { Emitter } from './events.js';
import { StepDetector } from './steps.js';

/** A node's shared clock; the scheduler's `now()` and `observeClock()`. */
export class SharedClock {
  private readonly steps = new StepDetector();

  /** `replan` plans every job again after a step of the wall clock (no shared clock). */
  constructor(
    private readonly clock: Timers,
    private readonly coordinator: Coordinator,
    private readonly emitter: Emitter,
    private readonly replan: (stepMs: number, wallMs: number) => void,
  ) {}

  /** The current time on the shared clock (Redis time when coordinated). */
  now(): number {
    return this.coordinator.now ? this.coordinator.now() : this.clock.now();
  }

  /**
   * The time to plan with, read with the check for a step of the wall clock (against the
   * monotonic one; after a step every job is planned again, once). One reading serves both: a
   * time read after the check could hold a step it has not seen, and a plan made from it would
   * have the step added again when the step is seen (an hour's wait after a step of an hour).
   */
  observe(): number {
    const wall = this.clock.now();
    const step = this.steps.observe(wall, this.clock.monotonic());
    if (step === 0) return this.coordinator.now ? this.coordinator.now() : wall;
    // On a shared clock (Redis time, read off the monotonic clock) nothing moved.
    if (this.coordinator.now) {
      this.emitter.emit('clockStep', { stepMs: step, replanned: false });
      return this.coordinator.now();
    }
    this.emitter.emit('clockStep', { stepMs: step, replanned: true });
    this.coordinator.afterClockStep?.(step);
    this.replan(step, wall);
    return wall;
  }
}
