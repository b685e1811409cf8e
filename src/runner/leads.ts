/**
 * Claim leads: how long before a grid tick an installation job's first claimer sends its
 * claim, so that the round trip to Redis is over when the tick comes and the run starts on it
 * (never before it). The jobs of one schedule on a node share one lead, learned from all their
 * claims' round trips: the jobs due together then fire together, and their claims travel in
 * one script call. Learned job by job, the leads of one tick's jobs drifted apart with the
 * order their answers were read in, and a node of S1 sent a tick's claims in three or four calls.
 * @module
 */

/** The longest a claim goes out before its tick, ms, however slow its answers come. */
export const MAX_CLAIM_LEAD_MS = 250;

/**
 * How early a schedule's claims go out while none of them has been answered yet: the
 * coordinator's `baseMs` doubled four times, at most {@link MAX_CLAIM_LEAD_MS} (160 ms for
 * Redis's 10). A node's first claims are its slowest: every job due at its first tick claims at
 * once, its code is not optimized yet, and its heap grows. With a first lead of 10 ms, the first
 * run of a node of S3 (a third of 1,000 jobs) started 37 to 128 ms late and its last 156 to 232;
 * with 160 ms, its last started 35 to 54 ms late. From the first answer on the lead follows the
 * round trips ({@link nextClaimLead}).
 */
export function firstClaimLead(baseMs: number): number {
  return Math.min(baseMs * 16, MAX_CLAIM_LEAD_MS);
}

/**
 * The lead of the next claims after round trips whose slowest took `roundTripMs`: enough for it
 * with a quarter to spare (a tick of a thousand jobs queues their claims in Redis for tens of
 * ms, and its runs would start that late). Leads are the coordinator's `baseMs` doubled as often
 * as needed, so that schedules due together still fire together and their claims travel in one
 * batch; a lead twice what its round trips need halves (a schedule's, after {@link CALM_TICKS}
 * such ticks in a row).
 */
export function nextClaimLead(previousMs: number, roundTripMs: number, baseMs: number): number {
  if (!(baseMs > 0)) return 0; // a coordinator without a lead claims on the tick
  const needed = Math.ceil(roundTripMs * 1.25) + 2;
  // The lead on the ladder: a lead at the cap stands for the step above it, so that it halves
  // onto the ladder (250 to 160, not 125) and fires again with the jobs that never reached it.
  let lead = baseMs;
  while (lead < previousMs) lead *= 2;
  if (needed > lead) while (lead < needed && lead < MAX_CLAIM_LEAD_MS) lead *= 2;
  else if (needed <= lead / 2) lead = Math.max(baseMs, lead / 2);
  return Math.min(lead, MAX_CLAIM_LEAD_MS);
}

/** Ticks in a row whose round trips needed half the lead or less before the lead halves. */
const CALM_TICKS = 4;

/** The lead of one schedule on a node. */
interface Lead {
  /** The lead, ms; 0 until a claim is answered (the first lead). */
  ms: number;
  /** The slowest round trip answered since the lead was last planned with, ms; -1: none. */
  slowestMs: number;
  /** The latest tick a fire was planned for with it. */
  plannedTick: number;
  /** Ticks in a row, up to the last planned, whose round trips needed half the lead or less. */
  calmTicks: number;
}

/** The claim leads of one node's schedules; see the module comment. */
export class ClaimLeads {
  /**
   * By schedule (its trigger's key). A schedule no job of the node follows any more keeps its
   * entry, three numbers, for as long as the runner lives.
   */
  private readonly bySchedule = new Map<string, Lead>();

  /** `baseMs`: the coordinator's lead (0: claims go out on the tick). */
  constructor(private readonly baseMs: number) {}

  /**
   * The lead of a fire planned for `tick` of `schedule`. The first fire planned for a later
   * tick than the last one takes in the round trips answered since (once a tick, however many
   * jobs the schedule has): the first answers set the lead, and later it halves once
   * {@link CALM_TICKS} ticks in a row needed half of it or less. Shared by every job due at the
   * tick, a lead halved after one quick tick makes the whole next tick late when its answers
   * come slower again.
   */
  plan(schedule: string, tick: number): number {
    const lead = this.of(schedule);
    if (tick > lead.plannedTick) {
      lead.plannedTick = tick;
      if (lead.slowestMs >= 0) {
        const next = nextClaimLead(this.current(lead), lead.slowestMs, this.baseMs);
        lead.calmTicks = next < this.current(lead) ? lead.calmTicks + 1 : 0;
        if (lead.calmTicks >= CALM_TICKS || lead.ms === 0) {
          lead.ms = next;
          lead.calmTicks = 0;
        }
      }
      lead.slowestMs = -1;
    }
    return this.current(lead);
  }

  /**
   * Learns from one claim's round trip. A lead too short for it grows at once (true: the fires
   * planned with the old one can be moved earlier); one longer than it needs waits for the next
   * tick's {@link plan}, which takes in every answer of this one.
   */
  learn(schedule: string, roundTripMs: number): boolean {
    const lead = this.of(schedule);
    lead.slowestMs = Math.max(lead.slowestMs, roundTripMs);
    const before = this.current(lead);
    const next = nextClaimLead(before, roundTripMs, this.baseMs);
    if (next <= before) return false;
    lead.ms = next;
    return true;
  }

  private current(lead: Lead): number {
    return lead.ms > 0 ? lead.ms : firstClaimLead(this.baseMs);
  }

  private of(schedule: string): Lead {
    let lead = this.bySchedule.get(schedule);
    if (lead === undefined) {
      lead = { ms: 0, slowestMs: -1, plannedTick: -Infinity, calmTicks: 0 };
      this.bySchedule.set(schedule, lead);
    }
    return lead;
  }
}
