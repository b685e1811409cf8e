/**
 * The installation lease: claim a job's tick once for the whole installation,
 * extend the lease while the run goes on, release it when the run ends. All
 * decisions happen in Lua on Redis server time; a lease that is no longer
 * ours is never extended, deleted or overwritten.
 * @module
 */
import { systemClock, type TimerHandle, type Timers } from '../clock.js';
import { redisProblem, type RedisClient } from '../redis/connection.js';
import { LEASE_COMMAND_TIMEOUT_MS } from '../redis/roles.js';
import { ErrorCodes, LeaseholdError, isLeaseholdError, errorMessage } from '../errors.js';
import type { ClaimRequest, ClaimResult } from '../redis/claim.js';
import { claimScript, extendScript, isRefusedLate, releaseScript, type ClaimScriptArgs, type ReleaseScriptArgs } from '../redis/lease-scripts.js';
import { JOBS_PER_CALL } from '../redis/scripts.js';
import type { Keys } from '../redis/keys.js';
import { DEFAULT_RECENT_RUNS } from '../redis/record.js';
import { isCluster, pipelined } from '../redis/pipeline.js';
import { batcher, type Batcher } from './batcher.js';

/**
 * How long before a grid tick (on the node's measured Redis time) its claim is sent, so that
 * the round trip to Redis is over when the tick comes and the run starts on it. The run itself
 * never starts before its tick.
 */
export const CLAIM_LEAD_MS = 10;

/**
 * How long after a claim is sent (on the node's measured Redis time) Redis still grants it:
 * half the lease connection's command timeout, after which the node stops waiting for the
 * answer. The other half is room for the error of the measured offset and the answer's way
 * back. A claim Redis reaches later, after a stall of Redis or of the connection, would be
 * granted to a node that no longer waits: its lease would hold the job with no run.
 */
export const CLAIM_ANSWER_WINDOW_MS = LEASE_COMMAND_TIMEOUT_MS / 2;

/** Room for the error of a node's measured offset to Redis time, ms. */
const OFFSET_SLACK_MS = 10;

/**
 * How far before its tick (on Redis time) a claim is accepted: its lead (at least
 * {@link CLAIM_LEAD_MS}) plus room for the error of the measured offset. Anything earlier is
 * answered `early` and retried at the tick.
 */
export const NOW_GUARD_MS = CLAIM_LEAD_MS + OFFSET_SLACK_MS;

/** A claimed lease. Extend it while the run goes on; release it when the run ends. */
export interface Lease {
  /** The job it is for. */
  readonly jobId: string;
  /** The tick it was claimed for, epoch ms. */
  readonly tick: number;
  /** Fencing token: grows with every claim of the job. */
  readonly token: number;
  /** The value stored in Redis: `<holder> since <ISO> tick <ISO> token <n>`. */
  readonly value: string;
  /** Monotonic time (the store's clock) at which the claim was sent. */
  readonly claimedAt: number;
  /**
   * Make the lease live `leaseMs` more, counted from when Redis receives the
   * call. Resolves false when the lease is gone or someone else's, or when no
   * answer came before `deadlineMs` (absolute, on the store's monotonic
   * clock). Throws `redisError` when Redis fails.
   */
  extend(leaseMs: number, deadlineMs?: number): Promise<boolean>;
  /**
   * Delete the lease if it is still ours; resolves false (and changes
   * nothing) when it is not. For fixedDelay jobs pass `delayMs`: the job's
   * next start becomes Redis now plus the delay. With `handBack`, the claimed tick is handed
   * back (its run never began): the tick claimed before it is the last claimed tick again, so
   * another node may still claim it. Throws `redisError`.
   */
  release(delayMs?: number, handBack?: boolean): Promise<boolean>;
}

/** A claim as the lease store takes it: a {@link ClaimRequest} with the claimant and the guard. */
export interface LeaseClaim extends ClaimRequest {
  /** This instance's id. */
  readonly holder: string;
  /** How far before the tick a claim is accepted (server time), ms; default {@link NOW_GUARD_MS}. */
  readonly nowGuardMs?: number;
}

/** Claims installation leases; see {@link createLeaseStore}. */
export interface LeaseStore {
  /**
   * Claim `jobId`'s lease for `tick`. Throws `redisError` when Redis fails, so a broken Redis
   * never looks like someone else's turn.
   */
  claim(request: LeaseClaim): Promise<ClaimResult<Lease>>;
  /** Sends the claims made so far in this turn of the event loop now (they go out at its end anyway). */
  flush(): void;
}

/** Options for {@link createLeaseStore}. */
export interface LeaseStoreOptions {
  /** The clock: its monotonic ms for claim times and extension deadlines, and its timers. Default the system's. */
  clock?: Timers;
  /**
   * Send the claims (and the releases) made in one turn of the event loop as one script call
   * of up to {@link JOBS_PER_CALL} jobs: the claims of jobs due at the same instant travel
   * together. Off: one call per job, at once. Default: on, except on a Redis Cluster, where
   * each job's keys live in their own slot.
   */
  batch?: boolean;
  /** Length of each job's recent-runs list, where a claim pushes a lost run it finds; default {@link DEFAULT_RECENT_RUNS}. */
  runsCap?: number;
  /**
   * The time on Redis's clock (epoch ms) past which Redis refuses a claim sent now (it then
   * throws `redisError`, as a claim without an answer does), read as each call of claims is
   * sent, not when they were asked for: the event loop may be busy in between. Undefined, or
   * no function: accepted however late.
   */
  answerBy?: () => number | undefined;
  /**
   * Told when Redis refused a call's claims as late though the call was answered within
   * {@link CLAIM_ANSWER_WINDOW_MS}: the answer time was read off a wrong offset to Redis time
   * (Redis failed over to a server whose clock is off the old one's).
   */
  onRefusedInTime?: () => void;
}

function redisError(action: string, err: unknown): unknown {
  if (isLeaseholdError(err)) return err;
  const message = errorMessage(err);
  return new LeaseholdError(ErrorCodes.redisError, `${action} failed: ${message}`, { cause: err });
}

/** A lease store on `redis` (a `lease` connection) with key names from `keys`. */
export function createLeaseStore(redis: RedisClient, keys: Keys, options: LeaseStoreOptions = {}): LeaseStore {
  const clock = options.clock ?? systemClock;
  const perCall = (options.batch ?? !isCluster(redis)) ? JOBS_PER_CALL : 1;
  const { answerBy, onRefusedInTime } = options;
  const sendClaims = async (jobs: readonly ClaimScriptArgs[]): Promise<Array<ClaimResult<string> | Error>> => {
    const sentAt = clock.monotonic();
    const answers = await claimScript(redis, jobs, answerBy?.());
    if (onRefusedInTime && clock.monotonic() - sentAt < CLAIM_ANSWER_WINDOW_MS && answers.some(isRefusedLate)) onRefusedInTime();
    return answers;
  };
  const claims = batcher<ClaimScriptArgs, ClaimResult<string>>(sendClaims, perCall);
  const lastTicks = batcher<string, number | undefined>((stateKeys) => readLastTicks(redis, stateKeys), perCall);
  const releases = batcher<ReleaseScriptArgs, boolean>((jobs) => releaseScript(redis, jobs), perCall);

  const runsCap = options.runsCap ?? DEFAULT_RECENT_RUNS;
  type JobKeys = { lease: string; state: string; stats: string; runs: string };
  const jobKeys = new Map<string, JobKeys>();
  const keysOf = (jobId: string): JobKeys => {
    let k = jobKeys.get(jobId);
    if (k === undefined) {
      k = { lease: keys.lease(jobId), state: keys.state(jobId), stats: keys.stats(jobId), runs: keys.runs(jobId) };
      jobKeys.set(jobId, k);
    }
    return k;
  };

  const io: LeaseIo = { redis, clock, releases };

  return {
    flush: () => claims.flush(),
    async claim(request) {
      const { jobId, tick, leaseMs, holder, mode } = request;
      if (holder.length === 0) {
        throw new LeaseholdError(ErrorCodes.invalidConfig, `holder of the lease of job ${jobId} must not be empty`);
      }
      const { lease: leaseKey, state: stateKey, stats: statsKey, runs: runsKey } = keysOf(jobId);
      const claimedAt = clock.monotonic();
      let reply;
      try {
        if (request.backup === true && mode !== 'manual') {
          // The tick, or a later one, claimed already: what the claim would answer, uncounted.
          const lastTick = await lastTicks.send(stateKey);
          if (lastTick !== undefined && lastTick >= tick) return { kind: 'done', lastTick, counted: false };
        }
        reply = await claims.send({
          leaseKey, stateKey, statsKey, runsKey, countSkip: request.countSkip ?? false,
          tick, leaseMs, holder, mode, nowGuardMs: request.nowGuardMs ?? Math.max(NOW_GUARD_MS, (request.leadMs ?? 0) + OFFSET_SLACK_MS), runsCap,
          ...(request.request === undefined ? {} : { request: request.request }),
        });
      } catch (err) {
        // A bad argument is the caller's error, as it is.
        if (isLeaseholdError(err) && err.code !== ErrorCodes.redisError) throw err;
        // Said once, plainly: which Redis, and which tick of which job; the run records it as it is.
        const what = mode === 'manual' ? `the run now of "${jobId}"` : `tick ${new Date(tick).toISOString()} of "${jobId}"`;
        throw new LeaseholdError(ErrorCodes.redisError, `${redisProblem(redis, err)}; ${what} not claimed`, { cause: err });
      }
      if (reply.kind !== 'claimed') return reply;
      return { ...reply, lease: new RedisLease(io, jobId, tick, reply.token, reply.lease, claimedAt, leaseKey, stateKey, reply.previousTick) };
    },
  };
}

/**
 * The last claimed tick of each job (`HGET <state> tick`), pipelined: undefined where none is
 * claimed yet or the field holds no integer, and where Redis refused the read (a key of the
 * wrong type: the claim then says what it found). Rejects when Redis did not answer.
 */
async function readLastTicks(redis: RedisClient, stateKeys: readonly string[]): Promise<Array<number | undefined>> {
  const replies = await pipelined(redis, stateKeys.map((key) => ({ key, queue: (p) => void p.hget(key, 'tick') })));
  return replies.map(([err, value]) => {
    if (err !== null && err.name !== 'ReplyError') throw err;
    const tick = typeof value === 'string' ? Number(value) : NaN;
    return Number.isSafeInteger(tick) ? tick : undefined;
  });
}

/** What a {@link RedisLease} needs of its store. */
interface LeaseIo {
  readonly redis: RedisClient;
  readonly clock: Timers;
  readonly releases: Batcher<ReleaseScriptArgs, boolean>;
}

/** A claimed lease in Redis; see {@link Lease}. */
class RedisLease implements Lease {
  // Private fields: a lease that is logged shows its job, tick, token and value only.
  readonly #io: LeaseIo;
  readonly #leaseKey: string;
  readonly #stateKey: string;

  constructor(
    io: LeaseIo,
    readonly jobId: string,
    readonly tick: number,
    readonly token: number,
    readonly value: string,
    readonly claimedAt: number,
    leaseKey: string,
    stateKey: string,
    private readonly previousTick: number | null,
  ) {
    this.#io = io;
    this.#leaseKey = leaseKey;
    this.#stateKey = stateKey;
  }

  async extend(leaseMs: number, deadlineMs?: number): Promise<boolean> {
    const io = this.#io;
    const { clock } = io;
    const remaining = deadlineMs === undefined ? Infinity : deadlineMs - clock.monotonic();
    // Past the deadline the lease counts as lost: nothing is sent.
    if (remaining <= 0) return false;
    const call = extendScript(io.redis, { leaseKey: this.#leaseKey, value: this.value, leaseMs }).catch((err: unknown) => {
      throw redisError(`extending the lease of ${this.what()}`, err);
    });
    if (deadlineMs === undefined) return call;
    let timer: TimerHandle | undefined;
    const noAnswer = new Promise<false>((resolve) => {
      // Timers may fire a little early against the monotonic clock:
      // re-arm until the deadline has really passed.
      const arm = (ms: number): void => {
        timer = clock.setTimer(() => {
          const left = deadlineMs - clock.monotonic();
          if (left > 0) arm(left);
          else resolve(false);
        }, ms, true);
      };
      arm(remaining);
    });
    try {
      // A late answer or error, after the deadline, is settled into the
      // race and ignored: the caller has already been told "lost".
      return await Promise.race([call, noAnswer]);
    } finally {
      if (timer !== undefined) clock.clearTimer(timer);
    }
  }

  async release(delayMs = -1, handBack = false): Promise<boolean> {
    try {
      return await this.#io.releases.send({
        leaseKey: this.#leaseKey,
        stateKey: this.#stateKey,
        value: this.value,
        delayMs,
        ...(handBack ? { handBackTo: this.previousTick } : {}),
      });
    } catch (err) {
      throw redisError(`releasing the lease of ${this.what()}`, err);
    }
  }

  private what(): string {
    return `job ${this.jobId} (token ${this.token})`;
  }
}
