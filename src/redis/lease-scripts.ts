/**
 * The typed wrappers of the lease's scripts: `claim.lua` (a job's tick, once for the
 * installation), `extend.lua` and `release.lua`. See `scripts.ts` for how they are registered.
 * @module
 */
import { encodeClaimArgs, holderOf, parseRunMarker, type ClaimArgs, type ClaimResult } from './claim.js';
import type { RedisClient } from './connection.js';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { commands, flag, isInteger, perJob, requireInteger, sendValid, unexpected } from './scripts.js';

/** One job of {@link claimScript}: its keys and its arguments. */
export interface ClaimScriptArgs extends ClaimArgs {
  readonly leaseKey: string;
  readonly stateKey: string;
  /** The job's stats hash, where a counted `done` answer adds the claimed skip (and a lost run counts). */
  readonly statsKey: string;
  /** The job's recent runs, where a lost run is pushed. */
  readonly runsKey: string;
}

/** The errors of claims Redis refused as reaching it after their answer time. */
const lateRefusals = new WeakSet<object>();

/** Whether `err` is a claim's error saying that Redis refused it as reaching it after its answer time. */
export function isRefusedLate(err: unknown): boolean {
  return typeof err === 'object' && err !== null && lateRefusals.has(err);
}

/**
 * One job's answer of `claim.lua` as a {@link ClaimResult}, the lease being its value; a claim
 * Redis reached after its answer time as its error; undefined when malformed.
 */
function claimResult(answer: unknown): ClaimResult<string> | LeaseholdError | undefined {
  if (!Array.isArray(answer)) return undefined;
  const [kind, a, b, c, d, e, f] = answer as unknown[];
  switch (kind) {
    case 'stale':
      if (isInteger(a) && isInteger(b)) {
        const late = new LeaseholdError(ErrorCodes.redisError, `the claim reached Redis ${a - b} ms after its node stopped waiting for the answer (Redis or the connection stalled)`);
        lateRefusals.add(late);
        return late;
      }
      break;
    case 'early':
      if (isInteger(a)) return { kind, serverNowMs: a };
      break;
    case 'done':
      if (isInteger(a) && (b === 0 || b === 1)) return { kind, lastTick: a, counted: b === 1 };
      break;
    case 'notDue':
      if (isInteger(a)) return { kind, dueMs: a };
      break;
    case 'held':
      if (typeof a === 'string' && isInteger(b)) return { kind, holder: holderOf(a), value: a, pttlMs: b };
      break;
    case 'claimed':
      if (isInteger(a) && typeof b === 'string' && isInteger(c) && isInteger(d)) {
        const lost = typeof e === 'string' ? parseRunMarker(e, d) : undefined;
        return { kind, lease: b, token: a, previousTick: c < 0 ? null : c, serverNowMs: d, ...(lost ? { lost } : {}), ...failedTicksOf(f) };
      }
      break;
    case 'paused':
      if (isInteger(a)) return { kind, previousTick: a < 0 ? null : a };
      break;
  }
  return undefined;
}

/**
 * Run `claim.lua` once for several jobs: each job's lease is claimed for its tick, in order,
 * as if claimed alone. Resolves to one result per job (a claimed lease is the value the
 * script wrote), or that job's error (invalid arguments, a malformed reply); rejects only
 * when the call as a whole failed. All keys must be on one Redis (not split over a
 * Cluster's slots). With `answerBy` (epoch ms on Redis time), Redis refuses the claims if it
 * reaches them later: their claimant no longer waits for the answer.
 */
export async function claimScript(redis: RedisClient, jobs: readonly ClaimScriptArgs[], answerBy?: number): Promise<Array<ClaimResult<string> | Error>> {
  if (answerBy !== undefined) requireInteger('answerBy', answerBy, 0);
  return sendValid(jobs, (j) => {
    requireInteger('tick', j.tick, 0);
    requireInteger('leaseMs', j.leaseMs, 1);
    requireInteger('nowGuardMs', j.nowGuardMs, 0);
    requireInteger('runsCap', j.runsCap, 1);
  }, async (valid) => {
    const args: string[] = [];
    for (const j of valid) args.push(j.leaseKey, j.stateKey, j.statsKey, j.runsKey);
    for (const j of valid) args.push(encodeClaimArgs(j, answerBy));
    const reply = await commands(redis).leaseholdClaim(4 * valid.length, ...args);
    return perJob('claim', reply, valid.length, claimResult);
  });
}

/** Run `extend.lua`: true when the lease was still `value` and now lives `leaseMs` more. */
export async function extendScript(redis: RedisClient, args: { leaseKey: string; value: string; leaseMs: number }): Promise<boolean> {
  requireInteger('leaseMs', args.leaseMs, 1);
  const reply = await commands(redis).leaseholdExtend(args.leaseKey, args.value, String(args.leaseMs));
  if (reply !== 0 && reply !== 1) throw unexpected('extend', reply);
  return reply === 1;
}

/** One job of {@link releaseScript}; see `scripts/release.lua`. */
export interface ReleaseScriptArgs {
  leaseKey: string;
  stateKey: string;
  /** The lease value the claim wrote. */
  value: string;
  /** fixedDelay: the next start is server now plus this; -1 for other schedules. */
  delayMs: number;
  /**
   * Hand the claimed tick back (its run never began): the tick claimed before it (null: none)
   * becomes the last claimed tick again. Absent: the claimed tick stays claimed.
   */
  handBackTo?: number | null;
}

/**
 * Run `release.lua` once for several jobs. Each resolves to true when the lease was still
 * `value` and is deleted (with `delayMs >= 0` the job's next fixedDelay start becomes server
 * now plus `delayMs`), false when it is gone or someone else's, or that job's error. Rejects
 * only when the call as a whole failed. All keys must be on one Redis.
 */
export async function releaseScript(redis: RedisClient, jobs: readonly ReleaseScriptArgs[]): Promise<Array<boolean | Error>> {
  return sendValid(jobs, (j) => requireInteger('delayMs', j.delayMs, -1), async (valid) => {
    const keys: string[] = [];
    const argv: string[] = [];
    for (const j of valid) {
      keys.push(j.leaseKey, j.stateKey);
      argv.push(j.value, String(j.delayMs), j.handBackTo === undefined ? '' : String(j.handBackTo ?? -1));
    }
    const reply = await commands(redis).leaseholdRelease(keys.length, ...keys, ...argv);
    return perJob('release', reply, valid.length, flag);
  });
}

/** The claim's `failedTicks` from its reply's space-separated ticks (none: no member). */
function failedTicksOf(reply: unknown): { failedTicks?: readonly number[] } {
  const ticks = typeof reply === 'string' ? reply.split(' ').filter((t) => t !== '').map(Number).filter(Number.isSafeInteger) : [];
  return ticks.length > 0 ? { failedTicks: ticks } : {};
}
