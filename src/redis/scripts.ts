/**
 * The Lua scripts of `./scripts/`, each with one typed wrapper: claim, extend and release a
 * job's lease; record a job's stats batch; prune the rows of gone instances. Each is read once
 * and registered with ioredis `defineCommand` once per connection (EVALSHA, else EVAL). The
 * wrappers check their arguments before anything is sent and every reply before returning it.
 * @module
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import { ErrorCodes, LeaseholdError, leaseholdError } from '../errors.js';
import { encodeClaimArgs, holderOf, parseRunMarker, type ClaimArgs, type ClaimResult } from './claim.js';
import type { RecordOptions, RecordReply, RecordScriptArgs } from './record.js';
import type { RedisClient } from './connection.js';
import { isCluster, pipelined } from './pipeline.js';

/**
 * The commands `defineCommand` adds to a connection. Scripts that serve any number of jobs
 * take the number of keys as their first argument.
 */
interface ScriptCommands {
  /** 4 keys per job, then 1 argument per job (see `claim.lua`). */
  leaseholdClaim(numberOfKeys: number, ...keysThenArgs: string[]): Promise<unknown>;
  leaseholdExtend(lease: string, value: string, leaseMs: string): Promise<unknown>;
  /** 2 keys per job, then 2 arguments per job (see `release.lua`). */
  leaseholdRelease(numberOfKeys: number, ...keysThenArgs: string[]): Promise<unknown>;
  leaseholdPrune(instances: string, stats: string, cutoff: string, ...ids: string[]): Promise<unknown>;
}

/** The commands `defineCommand` adds to the connection's pipelines, as used there. */
interface ScriptPipeline {
  /** 5 keys per job, then runsCap, keepMs and 3 arguments per job (see `record.lua`). */
  leaseholdRecord(numberOfKeys: number, ...keysThenArgs: string[]): ChainableCommander;
  /** 2 keys per job, then 3 arguments per job (see `versions.lua`). */
  leaseholdVersions(numberOfKeys: number, ...keysThenArgs: string[]): ChainableCommander;
}

/** Each script's command and file; `numberOfKeys` when it is fixed. */
const SCRIPTS: ReadonlyArray<{ command: keyof ScriptCommands | keyof ScriptPipeline; file: string; numberOfKeys?: number }> = [
  { command: 'leaseholdClaim', file: 'claim.lua' },
  { command: 'leaseholdExtend', file: 'extend.lua', numberOfKeys: 1 },
  { command: 'leaseholdRelease', file: 'release.lua' },
  { command: 'leaseholdRecord', file: 'record.lua' },
  { command: 'leaseholdPrune', file: 'prune.lua', numberOfKeys: 2 },
  { command: 'leaseholdVersions', file: 'versions.lua' },
];

const sources = new Map<string, string>();
const registered = new WeakSet<RedisClient>();

/** A script's Lua text, read from disk once. */
function source(file: string): string {
  let lua = sources.get(file);
  if (lua === undefined) {
    lua = readFileSync(new URL(`./scripts/${file}`, import.meta.url), 'utf8');
    sources.set(file, lua);
  }
  return lua;
}

/** `redis` with the scripts' commands, registered on first use. */
function commands(redis: RedisClient): ScriptCommands {
  if (!registered.has(redis)) {
    for (const { command, file, numberOfKeys } of SCRIPTS) {
      redis.defineCommand(command, numberOfKeys === undefined ? { lua: source(file) } : { numberOfKeys, lua: source(file) });
    }
    registered.add(redis);
  }
  return redis as unknown as ScriptCommands;
}

/** At most this many jobs go in one call of a script that serves many, so Redis is never busy long with one call. */
export const JOBS_PER_CALL = 100;

type ScriptName = 'claim' | 'extend' | 'release' | 'record' | 'prune' | 'versions';

function unexpected(script: ScriptName, reply: unknown): LeaseholdError {
  return new LeaseholdError(ErrorCodes.redisError, `unexpected reply from the ${script} script: ${JSON.stringify(reply)}`);
}

function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

/** Throws `invalidConfig` unless `value` is an integer >= `min`. */
function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}

/**
 * Checks each job with `check` (which throws its error), sends the valid ones with `send`,
 * and answers per job in input order: its reply, or its own error. One job's bad arguments
 * never fail the others; `send` failing as a whole rejects.
 */
async function sendValid<J, R>(jobs: readonly J[], check: (job: J) => void, send: (valid: J[]) => Promise<Array<R | Error>>): Promise<Array<R | Error>> {
  const refused = jobs.map((job): Error | undefined => {
    try {
      check(job);
      return undefined;
    } catch (err) {
      return err as Error;
    }
  });
  const valid = jobs.filter((_, i) => refused[i] === undefined);
  const replies = valid.length > 0 ? await send(valid) : [];
  let next = 0;
  return refused.map((err) => err ?? (replies[next++] as R | Error));
}

/** The job id in a per-job key's hash tag (`<prefix>:{<jobId>}:state`), or the key when it has none. */
function jobOf(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open ? key.slice(open + 1, close) : key;
}

/**
 * The reply of a script that serves many jobs, one answer per job in order: a job's
 * `{'error', message}` becomes its `redisError`, its `{'corrupt', key, found, want}` (a key of
 * the wrong type) its `corruptState`, any other answer is `read`'s to check (undefined:
 * malformed). Throws when the reply is not one answer per job.
 */
function perJob<R>(script: ScriptName, reply: unknown, jobs: number, read: (answer: unknown, job: number) => R | undefined): Array<R | LeaseholdError> {
  if (!Array.isArray(reply) || reply.length !== jobs) throw unexpected(script, reply);
  return reply.map((answer: unknown, job) => {
    if (Array.isArray(answer) && answer[0] === 'error') {
      return new LeaseholdError(ErrorCodes.redisError, `the ${script} script refused: ${String(answer[1])}`);
    }
    if (Array.isArray(answer) && answer[0] === 'corrupt' && answer.every((part) => typeof part === 'string')) {
      const [, key, found, want] = answer as string[];
      return leaseholdError(ErrorCodes.corruptState, { key: key ?? '', found: found ?? '', want: want ?? '', job: jobOf(key ?? '') });
    }
    return read(answer, job) ?? unexpected(script, answer);
  });
}

/** A 1 or 0 answer as true or false. */
const flag = (answer: unknown): boolean | undefined => (answer === 1 ? true : answer === 0 ? false : undefined);

/** One job's answer of `record.lua`; undefined when malformed. */
function recordReply(answer: unknown): RecordReply | undefined {
  if (answer === 0) return { applied: false, streakBefore: null };
  if (!Array.isArray(answer) || answer[0] !== 'applied' || !isInteger(answer[1])) return undefined;
  return { applied: true, streakBefore: answer[1] >= 0 ? answer[1] : null };
}

/** One job of {@link claimScript}: its keys and its arguments. */
export interface ClaimScriptArgs extends ClaimArgs {
  readonly leaseKey: string;
  readonly stateKey: string;
  /** The job's stats hash, where a counted `done` answer adds the claimed skip (and a lost run counts). */
  readonly statsKey: string;
  /** The job's recent runs, where a lost run is pushed. */
  readonly runsKey: string;
}

/** One job's answer of `claim.lua` as a {@link ClaimResult}, the lease being its value; undefined when malformed. */
function claimResult(answer: unknown): ClaimResult<string> | undefined {
  if (!Array.isArray(answer)) return undefined;
  const [kind, a, b, c, d, e] = answer as unknown[];
  switch (kind) {
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
        return { kind, lease: b, token: a, previousTick: c < 0 ? null : c, serverNowMs: d, ...(lost ? { lost } : {}) };
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
 * Cluster's slots).
 */
export async function claimScript(redis: RedisClient, jobs: readonly ClaimScriptArgs[]): Promise<Array<ClaimResult<string> | Error>> {
  return sendValid(jobs, (j) => {
    requireInteger('tick', j.tick, 0);
    requireInteger('leaseMs', j.leaseMs, 1);
    requireInteger('nowGuardMs', j.nowGuardMs, 0);
    requireInteger('runsCap', j.runsCap, 1);
  }, async (valid) => {
    const args: string[] = [];
    for (const j of valid) args.push(j.leaseKey, j.stateKey, j.statsKey, j.runsKey);
    for (const j of valid) args.push(encodeClaimArgs(j));
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

/**
 * Run `record.lua` for several batches (of different jobs): on a single Redis in as few calls
 * as possible (up to {@link JOBS_PER_CALL} jobs each), on a Cluster one call per job (its keys
 * share a slot), pipelined. Each batch is applied atomically, on its own.
 * @returns per batch, in order: whether it was applied now and the job's failing streak
 *   before it; or its error with nothing written (`invalidConfig` for a bad `seq`,
 *   `corruptState`, `redisError`), or the error of the call that carried it.
 * @throws LeaseholdError `invalidConfig` for bad options (nothing is sent).
 */
export async function recordScript(redis: RedisClient, batches: readonly RecordScriptArgs[], options: RecordOptions): Promise<Array<RecordReply | Error>> {
  requireInteger('runsCap', options.runsCap, 1);
  requireInteger('keepMs', options.keepMs, 1);
  return sendValid(batches, (b) => requireInteger('seq', b.seq, 1), async (valid) => {
    commands(redis);
    const size = isCluster(redis) ? 1 : JOBS_PER_CALL;
    const groups: RecordScriptArgs[][] = [];
    for (let i = 0; i < valid.length; i += size) groups.push(valid.slice(i, i + size));
    const replies = await pipelined(
      redis,
      groups.map((group) => ({
        key: group[0]?.statsKey,
        queue: (p) => {
          const keys = group.flatMap((a) => [a.statsKey, a.instancesKey, a.runsKey, a.stateKey, a.writersKey]);
          const argv = group.flatMap((a) => [a.writer, String(a.seq), JSON.stringify(a.batch)]);
          (p as unknown as ScriptPipeline).leaseholdRecord(keys.length, ...keys, String(options.runsCap), String(options.keepMs), ...argv);
        },
      })),
    );
    return groups.flatMap((group, g): Array<RecordReply | Error> => {
      const [err, reply] = replies[g] ?? [new Error('no reply'), undefined];
      if (err) return group.map(() => err);
      try {
        return perJob('record', reply, group.length, recordReply);
      } catch (malformed) {
        return group.map(() => malformed as LeaseholdError);
      }
    });
  });
}

/**
 * Run `prune.lua`: removes the rows of the given (gone) instances from a job's per-instance
 * hash when they were last seen before `cutoff`.
 * @returns the number of fields removed.
 */
export async function pruneScript(redis: RedisClient, args: { instancesKey: string; statsKey: string; cutoff: string; instanceIds: string[] }): Promise<number> {
  if (args.instanceIds.length === 0) return 0;
  const reply = await commands(redis).leaseholdPrune(args.instancesKey, args.statsKey, args.cutoff, ...args.instanceIds);
  if (!isInteger(reply)) throw unexpected('prune', reply);
  return reply;
}

/** A job a node's status read found before, as `versions.lua` takes it. */
export interface VersionsJob {
  readonly statsKey: string;
  readonly leaseKey: string;
  /** `<version> <createdAt>` as the node last read them. */
  readonly version: string;
  /** `seenAt` as the node last read it ('' when absent). */
  readonly seenAt: string;
  /** Read the lease (an installation job). */
  readonly lease: boolean;
}

/** What `versions.lua` found of a job that is not as the node knew it, or holds a lease. */
export interface VersionsFound {
  readonly version: string | undefined;
  readonly createdAt: string | undefined;
  readonly seenAt: string | undefined;
  /** The lease's PTTL (-2: none); null when it was not read. */
  readonly pttl: number | null;
  /** The lease's value; null when there is none. */
  readonly lease: string | null;
}

/**
 * Registers the scripts' commands on `redis`, once: a pipeline has them only when it is made
 * after that (call it before the pipeline that {@link queueVersions} queues on).
 */
export function useScripts(redis: RedisClient): void {
  commands(redis);
}

/**
 * Queues one call of `versions.lua` for `jobs` on `p`, a pipeline of a single Redis (the jobs'
 * keys lie in many slots) made after {@link useScripts}. Its reply is read by {@link versionsReply}.
 */
export function queueVersions(p: ChainableCommander, jobs: readonly VersionsJob[]): void {
  const keys = jobs.flatMap((j) => [j.statsKey, j.leaseKey]);
  const argv = jobs.flatMap((j) => [j.version, j.seenAt, j.lease ? '1' : '0']);
  (p as unknown as ScriptPipeline).leaseholdVersions(keys.length, ...keys, ...argv);
}

const textOrUndefined = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * The answers of a `versions.lua` call for `jobs` jobs, in order: null for a job as the node
 * knew it with no lease, else what was found.
 * @throws LeaseholdError `redisError` when the reply is not one answer per job.
 */
export function versionsReply(reply: unknown, jobs: number): Array<VersionsFound | null> {
  if (!Array.isArray(reply) || reply.length !== jobs) throw unexpected('versions', reply);
  return reply.map((answer: unknown) => {
    if (answer === 0) return null;
    if (!Array.isArray(answer)) throw unexpected('versions', answer);
    const [version, createdAt, seenAt, pttl, lease] = answer as unknown[];
    return { version: textOrUndefined(version), createdAt: textOrUndefined(createdAt), seenAt: textOrUndefined(seenAt), pttl: typeof pttl === 'number' ? pttl : null, lease: typeof lease === 'string' ? lease : null };
  });
}
