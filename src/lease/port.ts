/**
 * The lease port: what the runner asks of whatever decides which node runs an installation
 * tick. With Redis it is the lease store (`redis-coordinator.ts`); without Redis a local
 * stand-in (`local.ts`) makes this node the only one.
 * @module
 */
import type { ClaimRequest, ClaimResult as ClaimResultOf } from '../redis/claim.js';

export type { ClaimMode, ClaimRequest, LostRun } from '../redis/claim.js';

/** Why a lease can no longer be trusted. */
export const LeaseLossCauses = {
  /** The lease key is gone (expired or deleted) or holds another node's value. */
  gone: 'gone',
  /** An extension failed: Redis refused it or the connection broke. */
  redisFailed: 'redisFailed',
  /** Redis did not confirm an extension before the lease would have expired (a stalled Redis). */
  redisStalled: 'redisStalled',
  /** This process could not extend in time: its event loop was blocked past the lease deadline. */
  loopBlocked: 'loopBlocked',
} as const;
/** One of {@link LeaseLossCauses}. */
export type LeaseLossCause = (typeof LeaseLossCauses)[keyof typeof LeaseLossCauses];

/** A lost lease: the typed cause, and a sentence for people. */
export interface LeaseLoss {
  readonly cause: LeaseLossCause;
  readonly message: string;
  /** The error behind a `redisFailed` loss. */
  readonly error?: unknown;
}

/** A running watch of a held lease. */
export interface LeaseWatchHandle {
  /** Stops extending; `onLost` is not called after it. */
  stop(): void;
  /** Reports the loss now if the deadline passed without a confirmed extension (a blocked loop). */
  check(): void;
}

/** A lease this node holds for one run. */
export interface HeldLease {
  /** Fencing token of the claim. */
  readonly token: number;
  /**
   * Starts extending the lease every half lease time; `onLost` is called once when an
   * extension fails, finds the lease gone or someone else's, or gets no answer in time.
   */
  watch(leaseMs: number, onLost: (loss: LeaseLoss) => void): LeaseWatchHandle;
  /**
   * Releases the lease if it is still ours; for fixedDelay, records the next due time. With
   * `handBack` (its run never began) the tick is handed back: another node may still claim it.
   * Rejects when Redis did not answer; the coordinator then keeps sending the release until it
   * is answered or the lease would have expired, until it is closed.
   */
  release(delayMs: number | undefined, handBack?: boolean): Promise<boolean>;
}

/** What a claim found, a claimed lease being one this node holds. */
export type ClaimResult = ClaimResultOf<HeldLease>;

/** Decides installation ticks. */
export interface Coordinator {
  /**
   * Claims a tick; throws a LeaseholdError (`redisError`) when Redis refused or did not answer,
   * whose message says which Redis and which tick of which job (the run records it as it is).
   */
  claim(request: ClaimRequest): Promise<ClaimResult>;
  /**
   * The shared clock (Redis time), epoch ms, read off this node's monotonic clock so that a
   * step of the node's wall clock does not move it. Absent: the node schedules by its own
   * wall clock (no shared clock).
   */
  now?(): number;
  /**
   * How long before a grid tick the claim may be sent, ms: the claim's round trip then
   * happens ahead of the tick and the run starts on it (never before it). 0 or absent: at the tick.
   */
  readonly claimLeadMs?: number;
  /**
   * The node's wall clock stepped by `stepMs` and the node schedules by it (no shared clock):
   * ticks remembered on the old clock are moved with it (optional).
   */
  afterClockStep?(stepMs: number): void;
  /** Sends the claims made so far now, when the coordinator gathers them (optional). */
  flush?(): void;
  /** Releases resources. */
  close(): Promise<void>;
}
