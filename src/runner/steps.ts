/**
 * Steps of the wall clock: an NTP correction, a VM resumed or migrated, an operator setting
 * the time. Between two looks, the wall clock and the monotonic clock advance alike; when
 * they disagree by more than {@link STEP_TOLERANCE_MS}, the wall clock stepped by the
 * difference. Pure: it is handed both readings.
 * @module
 */

/** A wall-clock change smaller than this against the monotonic clock is drift, not a step, ms. */
export const STEP_TOLERANCE_MS = 1_000;

/** Watches the wall clock against the monotonic clock. */
export class StepDetector {
  private wall: number | undefined;
  private mono = 0;

  constructor(private readonly toleranceMs = STEP_TOLERANCE_MS) {}

  /**
   * Takes a reading of both clocks; answers the step since the last reading in ms (positive:
   * forward), or 0 when the wall clock kept pace.
   */
  observe(wallMs: number, monoMs: number): number {
    const last = this.wall;
    const step = last === undefined ? 0 : wallMs - last - (monoMs - this.mono);
    this.wall = wallMs;
    this.mono = monoMs;
    return Math.abs(step) > this.toleranceMs ? Math.round(step) : 0;
  }
}
