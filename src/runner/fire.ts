/**
 * The fire policy: what happens when a job's tick is due.
 * @module
 */
import type { ClaimMode } from '../lease/port.js';
import type { EffectiveSchedule } from '../schedule/trigger.js';
import type { SkipReason } from './events.js';
import { handoffOf, placeOf, type ClaimOrder } from './order.js';
import type { Slot } from './slot.js';
import type { Timetable } from './timetable.js';

/** What the fire policy needs of the runner. */
export interface FireHost {
  readonly timetable: Timetable;
  /** Who claims installation ticks. */
  readonly order: ClaimOrder;
  resolve(slot: Slot): void;
  skip(slot: Slot, reason: SkipReason, tick: number, now: number): void;
  begin(slot: Slot, eff: EffectiveSchedule, tick: number, mode: ClaimMode, request?: string, backup?: boolean): void;
}

/**
 * A job's tick is due: resolve its settings, plan the next fire, then skip it (paused, or its
 * previous run still going: no overlap, no burst) or begin it.
 */
export function fireTick(host: FireHost, slot: Slot, tick: number, now: number): void {
  if (now < tick && slot.busy) {
    // Fired ahead for its claim, but the previous run is still going: decide on the tick.
    host.timetable.at(slot, tick, tick);
    return;
  }
  // Installation ticks are claimed by the first node of the live nodes' ranking at the tick,
  // by the second a hand-off delay later (see handoffOf), by no other.
  const delay = slot.effective?.trigger.kind === 'fixedDelay';
  let place = slot.job.scope === 'installation' ? placeOf(host.order, slot.job.id, delay, tick) : 0;
  if (place === 1) {
    const handoff = handoffOf(host.order, slot, delay, tick);
    if (handoff === undefined) {
      place = 2;
    } else if (now < tick + handoff) {
      host.timetable.at(slot, tick + handoff, tick);
      return;
    }
  }
  host.timetable.dropRetry(slot); // a new tick supersedes any retry of an older one
  slot.lastTick = Math.max(slot.lastTick, tick);
  const before = slot.effective?.trigger.key;
  host.resolve(slot);
  const eff = slot.effective;
  if (slot.invalidCause || !eff) {
    host.timetable.planNext(slot, now);
    return;
  }
  const t = eff.trigger;
  if (t.key !== before && t.kind !== 'fixedDelay') {
    // The cadence changed since this fire was planned: follow the new schedule.
    const next = t.next(now - 1);
    if (next !== tick) {
      host.timetable.tick(slot, next);
      return;
    }
  }
  if (t.kind !== 'fixedDelay') host.timetable.planNext(slot, Math.max(now, tick));
  else slot.nextAt = null;
  if (place >= 2) {
    // Not this node's tick to claim: nothing to do, and nothing to count.
    if (t.kind === 'fixedDelay') host.timetable.tick(slot, now + t.intervalMs);
    return;
  }
  if (slot.paused) {
    // An installation tick on a grid is marked as handled through the claim: one paused skip
    // cluster-wide, and never counted missed later. Elsewhere the skip is this node's.
    if (slot.job.scope === 'installation' && t.kind !== 'fixedDelay' && !slot.busy) host.begin(slot, eff, tick, 'pause', undefined, place === 1);
    else host.skip(slot, 'paused', tick, now);
    if (t.kind === 'fixedDelay') host.timetable.tick(slot, now + t.intervalMs);
    return;
  }
  if (slot.busy) {
    host.skip(slot, 'overrun', tick, now);
    // Only an installation tick on a grid is judged missed later, by a claim's previous tick.
    if (slot.job.scope === 'installation' && t.kind !== 'fixedDelay') slot.noteOverrun(tick);
    return;
  }
  host.begin(slot, eff, tick, t.kind === 'fixedDelay' ? 'delay' : 'grid', undefined, place === 1);
}
