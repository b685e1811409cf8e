/**
 * A run in progress as the runner sees it, and the end of the runs in progress at a stop.
 * @module
 */
import { waitAtMost, type Timers } from '../clock.js';
import { ErrorCodes, type AbortReasonCode } from '../errors.js';

/** How long after the shutdown grace aborted handlers get to settle, so their leases are released. */
const AFTER_ABORT_MS = 1_000;

/**
 * Ends the runs in progress at a stop (SPEC 3.6): waits up to the grace for them (and for the
 * claims in flight), then aborts the rest with reason `shutdown`, gives them a moment to settle
 * and release their leases, and reports those that ignore the abort as interrupted.
 */
export async function endRuns(clock: Timers, runs: () => ActiveRun[], claims: () => Promise<void>, graceMs: number): Promise<void> {
  const settled = (): Promise<unknown> => Promise.all([claims(), ...runs().map((r) => r.settled)]);
  await waitAtMost(clock, settled(), graceMs);
  if (runs().length === 0) return;
  for (const run of runs()) run.abort(ErrorCodes.shutdown);
  await waitAtMost(clock, settled(), AFTER_ABORT_MS);
  for (const run of runs()) run.reportNow();
}

/** A run in progress. */
export interface ActiveRun {
  readonly runId: string;
  readonly startedAt: number;
  /** The abort reason, once aborted. */
  readonly abortedReason: AbortReasonCode | undefined;
  /** Resolves when the handler has settled and the lease is released. Never rejects. */
  readonly settled: Promise<void>;
  /** Aborts the run's signal (once); the outcome follows the reason. */
  abort(reason: AbortReasonCode, detail?: string): void;
  /**
   * Reports the outcome now if not yet reported: the handler's when it has settled (its lease's
   * release still going on), else the abort's (shutdown gives up on a stuck handler).
   */
  reportNow(): void;
}
