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
  leaseholdClaim(lease: string, state: string, stats: string, tick: string, leaseMs: string, holder: string, mode: string, nowGuardMs: string, countSkip: string): Promise<unknown>;
  leaseholdExtend(lease: string, value: string, leaseMs: string): Promise<unknown>;
  leaseholdRelease(lease: string, state: string, value: string, delayMs: string): Promise<unknown>;
}

const SCRIPTS: ReadonlyArray<{ command: keyof ScriptCommands; file: string; numberOfKeys: number }> = [
  { command: 'leaseholdClaim', file: 'claim.lua', numberOfKeys: 3 },
  { command: 'leaseholdExtend', file: 'extend.lua', numberOfKeys: 1 },
  { command: 'leaseholdRelease', file: 'release.lua', numberOfKeys: 2 },
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
      redis.defineCommand(command, { numberOfKeys, lua: source(file) });
    }
    prepared.add(redis);
  }
  return redis as unknown as ScriptCommands;
}

function unexpected(script: string, reply: unknown): LeaseholdError {
  return new LeaseholdError(ErrorCodes.REDIS_ERROR, `unexpected reply from the ${script} script: ${JSON.stringify(reply)}`);
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
    throw new LeaseholdError(ErrorCodes.INVALID_CONFIG, `${name} must be an integer >= ${min}, got ${String(value)}`);
  }
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

/** Run `claim.lua`: claim the lease for one tick and mint a fencing token. */
export async function claimScript(redis: RedisClient, args: ClaimScriptArgs): Promise<ClaimReply> {
  requireInteger('tick', args.tick, 0);
  requireInteger('leaseMs', args.leaseMs, 1);
  requireInteger('nowGuardMs', args.nowGuardMs, 0);
  const reply = await commands(redis).leaseholdClaim(
    args.leaseKey, args.stateKey, args.statsKey, String(args.tick), String(args.leaseMs), args.holder, args.mode, String(args.nowGuardMs), args.countSkip ? '1' : '0',
  );
  if (!Array.isArray(reply)) throw unexpected('claim', reply);
  const [kind, a, b, c, d] = reply as unknown[];
  switch (kind) {
    case 'early':
      return { kind, serverNowMs: int('claim', reply, a) };
    case 'done':
      return { kind, lastTick: int('claim', reply, a) };
    case 'notDue':
      return { kind, dueMs: int('claim', reply, a) };
    case 'held':
      return { kind, value: str('claim', reply, a), pttlMs: int('claim', reply, b) };
    case 'claimed':
      return {
        kind,
        token: int('claim', reply, a),
        value: str('claim', reply, b),
        previousTick: int('claim', reply, c),
        serverNowMs: int('claim', reply, d),
      };
    default:
      throw unexpected('claim', reply);
  }
}

/** Run `extend.lua`: true when the lease was still `value` and now lives `leaseMs` more. */
export async function extendScript(redis: RedisClient, args: { leaseKey: string; value: string; leaseMs: number }): Promise<boolean> {
  requireInteger('leaseMs', args.leaseMs, 1);
  const reply = await commands(redis).leaseholdExtend(args.leaseKey, args.value, String(args.leaseMs));
  if (reply !== 0 && reply !== 1) throw unexpected('extend', reply);
  return reply === 1;
}

/**
 * Run `release.lua`: true when the lease was still `value` and is deleted;
 * with `delayMs >= 0` the job's next fixedDelay start is set to server now
 * plus `delayMs`. Pass -1 for other schedules.
 */
export async function releaseScript(
  redis: RedisClient,
  args: { leaseKey: string; stateKey: string; value: string; delayMs: number },
): Promise<boolean> {
  requireInteger('delayMs', args.delayMs, -1);
  const reply = await commands(redis).leaseholdRelease(args.leaseKey, args.stateKey, args.value, String(args.delayMs));
  if (reply !== 0 && reply !== 1) throw unexpected('release', reply);
  return reply === 1;
}
