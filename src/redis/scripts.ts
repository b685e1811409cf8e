/**
 * The Lua scripts of `./scripts/`: each is read once and registered with ioredis
 * `defineCommand` once per connection (EVALSHA, else EVAL), and what their typed wrappers share:
 * checking the arguments before anything is sent, and each job's answer before it is returned.
 * The wrappers are `lease-scripts.ts` (claim, extend and release a job's lease) and
 * `stats-scripts.ts` (record a job's stats batch, prune the rows of gone instances, read what
 * moved for the status).
 * @module
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import { ErrorCodes, LeaseholdError, leaseholdError } from '../errors.js';
import type { RedisClient } from './connection.js';

/**
 * The commands `defineCommand` adds to a connection. Scripts that serve any number of jobs
 * take the number of keys as their first argument.
 */
export interface ScriptCommands {
  /** 4 keys per job, then 1 argument per job (see `claim.lua`). */
  leaseholdClaim(numberOfKeys: number, ...keysThenArgs: string[]): Promise<unknown>;
  leaseholdExtend(lease: string, value: string, leaseMs: string): Promise<unknown>;
  /** 2 keys per job, then 2 arguments per job (see `release.lua`). */
  leaseholdRelease(numberOfKeys: number, ...keysThenArgs: string[]): Promise<unknown>;
  leaseholdPrune(instances: string, stats: string, cutoff: string, ...ids: string[]): Promise<unknown>;
}

/** The commands `defineCommand` adds to the connection's pipelines, as used there. */
export interface ScriptPipeline {
  /** 6 keys per job, then runsCap, keepMs and 3 arguments per job (see `record.lua`). */
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

/**
 * `redis` with the scripts' commands, registered on first use. A pipeline has them only when it
 * is made after that: call it before making a pipeline that queues one.
 */
export function commands(redis: RedisClient): ScriptCommands {
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

export type ScriptName = 'claim' | 'extend' | 'release' | 'record' | 'prune' | 'versions';

export function unexpected(script: ScriptName, reply: unknown): LeaseholdError {
  return new LeaseholdError(ErrorCodes.redisError, `unexpected reply from the ${script} script: ${JSON.stringify(reply)}`);
}

export function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

/** Throws `invalidConfig` unless `value` is an integer >= `min`. */
export function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}

/**
 * Checks each job with `check` (which throws its error), sends the valid ones with `send`,
 * and answers per job in input order: its reply, or its own error. One job's bad arguments
 * never fail the others; `send` failing as a whole rejects.
 */
export async function sendValid<J, R>(jobs: readonly J[], check: (job: J) => void, send: (valid: J[]) => Promise<Array<R | Error>>): Promise<Array<R | Error>> {
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
export function perJob<R>(script: ScriptName, reply: unknown, jobs: number, read: (answer: unknown, job: number) => R | undefined): Array<R | LeaseholdError> {
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
export const flag = (answer: unknown): boolean | undefined => (answer === 1 ? true : answer === 0 ? false : undefined);

/** `p`, a pipeline made after {@link commands} registered the scripts on its connection, with their pipeline commands. */
export function scriptPipeline(p: ChainableCommander): ScriptPipeline {
  return p as unknown as ScriptPipeline;
}
