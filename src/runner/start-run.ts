/**
 * A run begins: an instance job's tick at once, an installation job's once its claim is won.
 * The run goes through `executeRun` (`run.ts`); when it settles, a fixedDelay job's next start
 * is planned the delay after its end.
 * @module
 */
import type { Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import type { HeldLease } from '../lease/port.js';
import type { EffectiveSchedule } from '../schedule/trigger.js';
import type { SubmitTask } from '../schedule/submit.js';
import type { Emitter } from './events.js';
import type { RunHooks } from './hooks.js';
import { executeRun } from './run.js';
import type { Slot } from './slot.js';
import type { Timetable } from './timetable.js';

/** What a run's start needs of the runner. */
export interface RunStartHost {
  readonly instanceId: string;
  readonly clock: Timers;
  readonly emitter: Emitter;
  readonly timetable: Timetable;
  /** Whether runs may start (the runner runs and is not stopping). */
  readonly isRunning: boolean;
  /** The shared clock (Redis time when coordinated). */
  now(): number;
  /** The same, read with the check for a step of the wall clock. */
  observeClock(): number;
}

/** The runner's ports a run is given. */
export interface RunPorts {
  readonly logger: Logger;
  readonly hooks: RunHooks | undefined;
  readonly submit: SubmitTask;
}

/** Starts the run of the slot's `tick` and plans what its end decides. */
export function startRun(host: RunStartHost, ports: RunPorts, slot: Slot, eff: EffectiveSchedule, tick: number, manual: boolean, lease: HeldLease | undefined): void {
  const delay = eff.trigger.kind === 'fixedDelay';
  const run = executeRun({
    job: slot.job,
    tick,
    manual,
    timeoutMs: eff.timeoutMs,
    leaseMs: eff.leaseMs,
    lease,
    instanceId: host.instanceId,
    logger: ports.logger,
    clock: host.clock,
    now: () => host.now(),
    emitter: host.emitter,
    delayAfterMs: delay ? eff.trigger.intervalMs : undefined,
    nextTickAt: delay ? null : slot.nextAt,
    hooks: ports.hooks,
    submit: ports.submit,
  });
  slot.running = run;
  void run.settled.then(() => {
    if (slot.running === run) slot.running = undefined;
    const current = slot.effective?.trigger;
    // fixedDelay: the next start is the delay after this end (for an installation job the
    // claim compares it with the cluster's due time kept in Redis).
    if (host.isRunning && current?.kind === 'fixedDelay') {
      // A step since the last wake is taken in with the time the delay is planned from.
      host.timetable.tick(slot, host.observeClock() + current.intervalMs);
    }
  });
}
