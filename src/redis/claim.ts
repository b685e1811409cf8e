/**
 * The claim of an installation tick, as it travels from the runner to `claim.lua` and back:
 * what is asked, the script's argument for one job, and what was found. The lease store and
 * the lease port use these same types.
 * @module
 */

/**
 * What a claim is for: a tick on a fixed grid (cron, fixedRate), a tick after a delay
 * (fixedDelay), an operator's run now (`manual`: a claim of its own that leaves the schedule's
 * tick alone), or a tick of a paused job (`pause`: marked as handled, one skip cluster-wide).
 */
export type ClaimMode = 'grid' | 'delay' | 'manual' | 'pause';

/** A claim of one job's tick. Times are epoch ms on the shared (Redis) clock. */
export interface ClaimRequest {
  readonly jobId: string;
  /** The schedule tick; every node computes the same one. */
  readonly tick: number;
  /** Lease time to live, ms. */
  readonly leaseMs: number;
  readonly mode: ClaimMode;
  /** When the tick turns out claimed already, add this node's skip to the job's counters in the same call. Default false. */
  readonly countSkip?: boolean;
  /** `manual` only: the operator's request; claimed once cluster-wide however many nodes try it. */
  readonly request?: string;
  /** How long before its tick the claim was sent, ms (on the node's measured Redis time): it is accepted that early. */
  readonly leadMs?: number;
  /**
   * The claim of the tick's backup claimer, sent a hand-off delay after the tick: most often the
   * first claimer has the tick already, which a read of the job's last claimed tick tells without
   * running the claim. The answer is the claim's all the same. Default false.
   */
  readonly backup?: boolean;
}

/** What `claim.lua` reads of one job besides its keys; see the script's header. */
export interface ClaimArgs {
  /** The schedule tick, epoch ms. */
  readonly tick: number;
  /** Lease time to live, ms. */
  readonly leaseMs: number;
  readonly mode: ClaimMode;
  /** How far before the tick (server time) a claim is accepted, ms. */
  readonly nowGuardMs: number;
  /** Count a `done` answer as this claimant's skip (reason claimed) in the job's stats hash. */
  readonly countSkip: boolean;
  /** Instance id of the claimant. */
  readonly holder: string;
  /** Length of the job's recent-runs list (where a lost run found by the claim is pushed). */
  readonly runsCap: number;
  /** `manual` only: the operator's request id. */
  readonly request?: string;
}

/**
 * One job's argument of `claim.lua`: a JSON object of the members its header names. `answerBy`
 * is the call's (epoch ms on Redis time past which the claim is refused: its claimant no longer
 * waits for the answer).
 */
export function encodeClaimArgs(args: ClaimArgs, answerBy?: number): string {
  const { tick, leaseMs, mode, nowGuardMs, countSkip, holder, runsCap, request } = args;
  return JSON.stringify({ tick, leaseMs, mode, nowGuardMs, countSkip, holder, runsCap, request, answerBy });
}

/**
 * A run found lost by a claim: its lease expired while it ran and nobody recorded it (its node
 * was killed, or froze past its lease). The claim that found it recorded it, once, with outcome
 * `lost`. Times are epoch ms on Redis's clock.
 */
export interface LostRun {
  /** The lost run's fencing token. */
  readonly token: number;
  /** The tick it ran for (for a run now, the moment asked). */
  readonly tick: number;
  /** When its claim was made. */
  readonly startedAt: number;
  /** When the claim that found it was made. */
  readonly foundAt: number;
  /** The node that ran it. */
  readonly holder: string;
  /** Whether it was an operator's run now. */
  readonly manual: boolean;
}

/** Parses a running marker (`<token> <tick> <startedAt> <manual 0|1> <holder>`, see `claim.lua`); undefined for '' or another shape. */
export function parseRunMarker(marker: string, foundAt: number): LostRun | undefined {
  const m = /^(\d+) (-?\d+) (\d+) ([01]) (.*)$/s.exec(marker);
  if (!m) return undefined;
  return { token: Number(m[1]), tick: Number(m[2]), startedAt: Number(m[3]), foundAt, holder: m[5] ?? '', manual: m[4] === '1' };
}

/**
 * What a claim found, in the order `claim.lua` decides. `L` is what a claimed lease is where
 * the answer is read: the lease value the script wrote (its wrapper), a lease to extend and
 * release (the lease store), a lease the runner holds (the lease port).
 */
export type ClaimResult<L> =
  /**
   * The lease is ours for this tick: `token` is its fencing token, `previousTick` the tick
   * claimed before (null: none); `lost`, the run of an earlier claim this claim found lost and
   * recorded; `failedTicks`, the ticks between the two that were counted as failed claims (by
   * the records of the nodes whose claims of them got no answer), so not missed.
   */
  | { readonly kind: 'claimed'; readonly lease: L; readonly token: number; readonly previousTick: number | null; readonly serverNowMs: number; readonly lost?: LostRun; readonly failedTicks?: readonly number[] }
  /** This tick, or a later one, was claimed already (it runs or ran elsewhere): never run it. `counted` when the skip was recorded with it. */
  | { readonly kind: 'done'; readonly lastTick: number; readonly counted: boolean }
  /** Another run (of an earlier tick) holds the lease: `holder` is its instance id, `value` the whole lease value, `pttlMs` its time to live (-1: none). */
  | { readonly kind: 'held'; readonly holder: string; readonly value: string; readonly pttlMs: number }
  /** fixedDelay: the previous run's end plus the delay, `dueMs`, has not come yet. */
  | { readonly kind: 'notDue'; readonly dueMs: number }
  /** The shared clock has not reached the tick yet, beyond the tolerance. */
  | { readonly kind: 'early'; readonly serverNowMs: number }
  /** `pause`: the tick is marked as handled and counted as one paused skip (`previousTick` null: none before). */
  | { readonly kind: 'paused'; readonly previousTick: number | null };

/** The holder part of a lease value (`<holder> since ...`), or the whole value when it has another shape. */
export function holderOf(value: string): string {
  const at = value.indexOf(' since ');
  return at > 0 ? value.slice(0, at) : value;
}
