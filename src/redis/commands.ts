/**
 * One typed wrapper per Lua script in `./scripts/`. Scripts are registered
 * with ioredis `defineCommand` once per connection (EVALSHA, falling back to
 * EVAL when Redis has forgotten the script).
 * @module
 */
import { readFileSync } from 'node:fs';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from './connection.js';

/** The methods `defineCommand` adds to a connection; replies are checked by the wrappers. */
interface ScriptCommands {
  /** `numberOfKeys`, then 3 keys per job, then 1 argument per job (see `claim.lua`). */
  leaseholdClaim(...args: string[]): Promise<unknown>;
  leaseholdExtend(lease: string, value: string, leaseMs: string): Promise<unknown>;
  /** `numberOfKeys`, then 2 keys per job, then 2 arguments per job. */
  leaseholdRelease(...args: string[]): Promise<unknown>;
}

/** Scripts without `numberOfKeys` take it as their first argument (they serve any number of jobs). */
const SCRIPTS: ReadonlyArray<{ command: keyof ScriptCommands; file: string; numberOfKeys?: number }> = [
  { command: 'leaseholdClaim', file: 'claim.lua' },
  { command: 'leaseholdExtend', file: 'extend.lua', numberOfKeys: 1 },
  { command: 'leaseholdRelease', file: 'release.lua' },
];

let sources: Map<string, string> | undefined;
const prepared = new WeakSet<RedisClient>();

function source(file: string): string {
  sources ??= new Map();
  let lua = sources.get(file);
  if (lua === undefined) {
    lua = readFileSync(new URL(`./scripts/${file}`, import.meta.url), 'utf8');
    sources.set(file, lua);
  }
  return lua;
}

function commands(redis: RedisClient): ScriptCommands {
  if (!prepared.has(redis)) {
    for (const { command, file, numberOfKeys } of SCRIPTS) {
      redis.defineCommand(command, numberOfKeys === undefined ? { lua: source(file) } : { numberOfKeys, lua: source(file) });
    }
    prepared.add(redis);
  }
  return redis as unknown as ScriptCommands;
}

function unexpected(script: string, reply: unknown): LeaseholdError {
  return new LeaseholdError(ErrorCodes.redisError, `unexpected reply from the ${script} script: ${JSON.stringify(reply)}`);
}

function int(script: string, reply: unknown, value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  throw unexpected(script, reply);
}

function str(script: string, reply: unknown, value: unknown): string {
  if (typeof value === 'string') return value;
  throw unexpected(script, reply);
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}

/**
 * Checks each job with `check` (which throws its error), sends the valid ones in one call,
 * and answers per job in input order: its reply, or its own error. One job's bad arguments
 * never fail the others; the call failing as a whole rejects.
 */
async function sendValid<J, R>(jobs: readonly J[], check: (job: J) => void, send: (valid: J[]) => Promise<Array<R | LeaseholdError>>): Promise<Array<R | LeaseholdError>> {
  const answers: Array<R | LeaseholdError | undefined> = jobs.map((j) => {
    try {
      check(j);
      return undefined;
    } catch (err) {
      return err as LeaseholdError;
    }
  });
  const valid = jobs.filter((_, i) => answers[i] === undefined);
  const replies = valid.length > 0 ? await send(valid) : [];
  let next = 0;
  return answers.map((a) => a ?? (replies[next++] as R | LeaseholdError));
}

/** How a tick is matched: on a fixed grid (cron, fixedRate) or after a delay (fixedDelay). */
export type ClaimMode = 'grid' | 'delay';

/** Arguments of {@link claimScript}; see `scripts/claim.lua`. */
export interface ClaimScriptArgs {
  leaseKey: string;
  stateKey: string;
  /** The job's stats hash: a `done` answer adds the claimed skip there when `countSkip`. */
  statsKey: string;
  /** Count a `done` answer as this claimant's skip (reason claimed) in the stats hash. */
  countSkip: boolean;
  /** The schedule tick, epoch ms. */
  tick: number;
  /** Lease time to live, ms. */
  leaseMs: number;
  /** Instance id of the claimant. */
  holder: string;
  mode: ClaimMode;
  /** How far before the tick (server time) a claim is accepted, ms. */
  nowGuardMs: number;
}

/** What `claim.lua` decided, in its decision order. */
export type ClaimReply =
  | { kind: 'early'; serverNowMs: number }
  | { kind: 'done'; lastTick: number }
  | { kind: 'notDue'; dueMs: number }
  | { kind: 'held'; value: string; pttlMs: number }
  | { kind: 'claimed'; token: number; value: string; previousTick: number; serverNowMs: number };

function claimReply(item: unknown): ClaimReply | LeaseholdError {
  if (!Array.isArray(item)) return unexpected('claim', item);
  const [kind, a, b, c, d] = item as unknown[];
  try {
    switch (kind) {
      case 'error':
        return new LeaseholdError(ErrorCodes.redisError, `the claim script refused: ${str('claim', item, a)}`);
      case 'early':
        return { kind, serverNowMs: int('claim', item, a) };
      case 'done':
        return { kind, lastTick: int('claim', item, a) };
      case 'notDue':
        return { kind, dueMs: int('claim', item, a) };
      case 'held':
        return { kind, value: str('claim', item, a), pttlMs: int('claim', item, b) };
      case 'claimed':
        return {
          kind,
          token: int('claim', item, a),
          value: str('claim', item, b),
          previousTick: int('claim', item, c),
          serverNowMs: int('claim', item, d),
        };
      default:
        return unexpected('claim', item);
    }
  } catch (err) {
    return err as LeaseholdError;
  }
}

/**
 * Run `claim.lua` once for several jobs: each job's lease is claimed for its tick, in order,
 * as if claimed alone. Resolves to one reply per job, or that job's error (invalid arguments,
 * a malformed reply); rejects only when the call as a whole failed. All keys must be on one
 * Redis (not split over a Cluster's slots).
 */
export async function claimManyScript(redis: RedisClient, jobs: readonly ClaimScriptArgs[]): Promise<Array<ClaimReply | LeaseholdError>> {
  return sendValid(jobs, (j) => {
    requireInteger('tick', j.tick, 0);
    requireInteger('leaseMs', j.leaseMs, 1);
    requireInteger('nowGuardMs', j.nowGuardMs, 0);
  }, async (valid) => {
    // The keys, then one argument per job (see the script's header).
    const args: string[] = [String(3 * valid.length)];
    for (const j of valid) args.push(j.leaseKey, j.stateKey, j.statsKey);
    for (const j of valid) args.push(`${j.tick} ${j.leaseMs} ${j.mode} ${j.nowGuardMs} ${j.countSkip ? '1' : '0'} ${j.holder}`);
    const reply = await commands(redis).leaseholdClaim(...args);
    if (!Array.isArray(reply) || reply.length !== valid.length) throw unexpected('claim', reply);
    return reply.map(claimReply);
  });
}

/** Run `claim.lua` for one job: claim the lease for one tick and mint a fencing token. */
export async function claimScript(redis: RedisClient, args: ClaimScriptArgs): Promise<ClaimReply> {
  const [reply] = await claimManyScript(redis, [args]);
  if (reply === undefined || reply instanceof Error) throw reply ?? unexpected('claim', reply);
  return reply;
}

/** Run `extend.lua`: true when the lease was still `value` and now lives `leaseMs` more. */
export async function extendScript(redis: RedisClient, args: { leaseKey: string; value: string; leaseMs: number }): Promise<boolean> {
  requireInteger('leaseMs', args.leaseMs, 1);
  const reply = await commands(redis).leaseholdExtend(args.leaseKey, args.value, String(args.leaseMs));
  if (reply !== 0 && reply !== 1) throw unexpected('extend', reply);
  return reply === 1;
}

/** Arguments of {@link releaseScript}; see `scripts/release.lua`. */
export interface ReleaseScriptArgs {
  leaseKey: string;
  stateKey: string;
  /** The lease value the claim wrote. */
  value: string;
  /** fixedDelay: the next start is server now plus this; -1 for other schedules. */
  delayMs: number;
}

/**
 * Run `release.lua` once for several jobs. Each resolves to true when the lease was still
 * `value` and is deleted (with `delayMs >= 0` the job's next fixedDelay start becomes server
 * now plus `delayMs`), false when it is gone or someone else's, or that job's error. Rejects
 * only when the call as a whole failed. All keys must be on one Redis.
 */
export async function releaseManyScript(redis: RedisClient, jobs: readonly ReleaseScriptArgs[]): Promise<Array<boolean | LeaseholdError>> {
  return sendValid(jobs, (j) => requireInteger('delayMs', j.delayMs, -1), async (valid) => {
    const keys: string[] = [];
    const argv: string[] = [];
    for (const j of valid) {
      keys.push(j.leaseKey, j.stateKey);
      argv.push(j.value, String(j.delayMs));
    }
    const reply = await commands(redis).leaseholdRelease(String(keys.length), ...keys, ...argv);
    if (!Array.isArray(reply) || reply.length !== valid.length) throw unexpected('release', reply);
    return reply.map((r: unknown) => {
      if (r === 0 || r === 1) return r === 1;
      return typeof r === 'string' ? new LeaseholdError(ErrorCodes.redisError, `the release script refused: ${r}`) : unexpected('release', r);
    });
  });
}

/** Run `release.lua` for one job; see {@link releaseManyScript}. */
export async function releaseScript(redis: RedisClient, args: ReleaseScriptArgs): Promise<boolean> {
  const [reply] = await releaseManyScript(redis, [args]);
  if (reply === undefined || reply instanceof Error) throw reply ?? unexpected('release', reply);
  return reply;
}
