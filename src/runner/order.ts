/**
 * Who claims an installation tick. Every node runs the same timetable, but for each job and
 * tick one node (the first in a ranking of the live nodes that every node computes alike)
 * claims at the tick, a second claims a hand-off delay later as its backup, and the others
 * do not claim: the Redis work per tick does not grow with the number of nodes. The claim
 * still decides each tick once, so nodes that see the live nodes differently may cost a
 * hand-off delay or an extra claim, never a run twice. A backup whose first claimer lets a cron
 * or fixedRate tick pass (dead, or stalled) claims its next ones at the tick until that node
 * claims one again, and the node behind it becomes their backup, two hand-off delays late.
 * @module
 */
import type { Slot } from './slot.js';

/** The port the runner asks; the status layer's view of the live nodes implements it. */
export interface ClaimOrder {
  /**
   * This node's place for the job's tick among the live nodes that run the job: 0 claims at
   * the tick, 1 claims a hand-off delay after it (the backup), 2 or more does not claim. A
   * fixedDelay job has no shared tick: `tick` is undefined and the place is the job's own. A
   * node ranked behind nodes that let grid ticks pass (see {@link handoffFor}) passes over
   * them, but never to 0: it claims as a backup, reading first.
   */
  place(jobId: string, tick: number | undefined): number;
  /** How long after the tick the backup claims, ms. */
  readonly handoffMs: number;
  /**
   * How long after the job's grid tick (cron, fixedRate) this node, its backup, claims it: none
   * while every node ranked ahead let a tick pass (it died, or stalled) and was not found to claim
   * a later one; twice the hand-off delay when this node is the backup by passing over such a
   * node; else the hand-off delay. Absent: always the hand-off delay.
   */
  handoffFor?(jobId: string, tick: number): number;
  /**
   * What this node's claim as the backup of the job's grid tick found: `claimed` true when it
   * won the tick (the node ranked first had not claimed it), false when the tick was claimed
   * already. Answers the node ranked first when it is suspected from this answer on (the runner
   * then moves its fires planned a hand-off delay late to the tick), else undefined. Only the
   * answer of a node ranked second suspects a node, or clears one: a node that claimed as a
   * backup by passing over a suspect cannot tell which node ahead claimed, or tried.
   */
  backupAnswered?(jobId: string, tick: number, claimed: boolean): string | undefined;
}

/** A job's place for a tick, as {@link ClaimOrder.place} asks it (a fixedDelay job has no shared tick). */
export function placeOf(order: ClaimOrder, jobId: string, delay: boolean, tick: number): number {
  return order.place(jobId, delay ? undefined : tick);
}

/**
 * How long after the job's tick this node claims it as its backup (see
 * {@link ClaimOrder.handoffFor}), or undefined when it is the backup by passing over a suspect
 * and that is past the tick's misfire grace: no tick starts later than its grace, and the node
 * ranked second, live or not, has had its turn. The node ranked second always claims, however
 * long its hand-off: its claim is what tells it that the first let the tick pass. A fixedDelay
 * job's backup always waits the hand-off delay: its first claimer fires at its due time with no
 * lead, and a backup on the tick would race it for every run.
 */
export function handoffOf(order: ClaimOrder, slot: Slot, delay: boolean, tick: number): number | undefined {
  if (delay) return order.handoffMs;
  const handoff = order.handoffFor?.(slot.job.id, tick) ?? order.handoffMs;
  return handoff > order.handoffMs && slot.effective && handoff > slot.graceMs(slot.effective) ? undefined : handoff;
}

/** Without a view of the other nodes (no Redis): this node claims every tick. */
export const ALONE: ClaimOrder = { place: () => 0, handoffMs: 0 };
