/**
 * What the scheduler is built with: its ports, given at construction by the composition root,
 * and what each is without Redis (this node alone, no settings, no tracer, no executors).
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Coordinator } from '../lease/port.js';
import type { SubmitTask } from '../schedule/submit.js';
import type { RunHooks } from './hooks.js';
import type { ClaimOrder } from './order.js';
import type { SettingsSource } from './slot.js';

/** Options of the scheduler: its ports, each defaulting to what a node without Redis uses. */
export interface SchedulerOptions {
  readonly instanceId: string;
  readonly logger: Logger;
  /** How long `stop()` waits for runs in progress before aborting them, ms. */
  readonly shutdownGraceMs: number;
  readonly clock?: Clock;
  /** Who decides installation claims. Default: this node alone (a local coordinator). */
  readonly coordinator?: Coordinator;
  /** The jobs' settings (pause, schedule overrides). Default: none. */
  readonly settings?: SettingsSource;
  /** Who claims installation ticks. Default: this node claims every one. */
  readonly claimOrder?: ClaimOrder;
  /** What runs around each run (the tracer). Default: nothing. */
  readonly hooks?: RunHooks;
  /** How a run submits a background task (`ctx.submit`). Default: refused (no executors). */
  readonly submit?: SubmitTask;
}

/** No settings: every job runs as declared. */
export const NO_SETTINGS: SettingsSource = { get: () => ({}) };

/** No executors: `ctx.submit` is refused. */
export const NO_EXECUTORS: SubmitTask = () => Promise.reject(new LeaseholdError(ErrorCodes.invalidTask, 'ctx.submit: this runner has no executors'));
