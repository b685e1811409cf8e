/**
 * The typed wrappers of the status layer's Lua scripts (`scripts/record.lua`,
 * `scripts/prune.lua`), registered with ioredis `defineCommand` once per connection, as
 * `./commands.ts` does for the lease scripts.
 * @module
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from './connection.js';
import { isCluster, pipelined } from './pipeline.js';

interface StatusScriptCommands {
  leaseholdPrune(instances: string, cutoff: string, ...ids: string[]): Promise<unknown>;
}

/** The same commands queued on a pipeline. */
interface StatusScriptPipeline {
  /** `numberOfKeys`, then 4 keys per job, then runsCap, keepMs and 3 arguments per job. */
  leaseholdRecord(numberOfKeys: number, ...keysThenArgs: string[]): ChainableCommander;
}

const SCRIPTS: ReadonlyArray<{ command: keyof StatusScriptCommands | keyof StatusScriptPipeline; file: string; numberOfKeys: number | undefined }> = [
  // The number of keys varies (4 per job): given with each call.
  { command: 'leaseholdRecord', file: 'record.lua', numberOfKeys: undefined },
  { command: 'leaseholdPrune', file: 'prune.lua', numberOfKeys: 1 },
];

const sources = new Map<string, string>();
const prepared = new WeakSet<RedisClient>();

function commands(redis: RedisClient): StatusScriptCommands {
  if (!prepared.has(redis)) {
    for (const { command, file, numberOfKeys } of SCRIPTS) {
      let lua = sources.get(file);
      if (lua === undefined) {
        lua = readFileSync(new URL(`./scripts/${file}`, import.meta.url), 'utf8');
        sources.set(file, lua);
      }
      redis.defineCommand(command, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
    }
    prepared.add(redis);
  }
  return redis as unknown as StatusScriptCommands;
}

/** A stats batch as `record.lua` reads it; see the script's header for each member. */
export interface RecordBatch {
  init?: boolean;
  /** ISO-8601; set once, when the job's stats hash is created. */
  createdAt?: string;
  define?: Record<string, string>;
  incr?: Record<string, number>;
  last?: Record<string, string>;
  /** ISO-8601 end of the batch's newest successful run. */
  successAt?: string;
  fails?: number;
  set?: Record<string, string>;
  inst?: { id: string; incr?: Record<string, number>; last?: Record<string, string>; set?: Record<string, string> };
  /** Recent-run JSON strings, oldest first. */
  runs?: string[];
}

/** Arguments of {@link recordScript}. */
export interface RecordScriptArgs {
  statsKey: string;
  instancesKey: string;
  runsKey: string;
  batchesKey: string;
  /** The writer's id; sequence numbers are per writer. */
  writer: string;
  /** The batch's sequence number, >= 1, increasing per writer and job. */
  seq: number;
  batch: RecordBatch;
  /** Length of the recent-runs list. */
  runsCap: number;
  /** The batches hash expires this long (ms) after the job's last batch. */
  keepMs: number;
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new LeaseholdError(ErrorCodes.invalidConfig, `${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}

/** What became of one batch: applied now, applied before (a retry), or an error. */
export type RecordResult = { readonly ok: true; readonly applied: boolean } | { readonly ok: false; readonly error: Error };

/** At most this many jobs' batches go in one call of `record.lua` (bounds one call's run time). */
export const RECORD_JOBS_PER_CALL = 100;

/**
 * Run `record.lua` for several batches (of different jobs): on a single Redis in as few calls
 * as possible (up to {@link RECORD_JOBS_PER_CALL} jobs each), on a Cluster one call per job
 * (its keys share a slot), pipelined. Each batch is applied atomically, on its own.
 * @returns per batch, in order: `applied` true when applied now, false when the writer had
 *   applied this sequence number before; or the error of that batch.
 * @throws LeaseholdError `invalidConfig` for a bad argument (nothing is sent).
 */
export async function recordScript(redis: RedisClient, batches: readonly RecordScriptArgs[]): Promise<RecordResult[]> {
  for (const args of batches) {
    requireInteger('seq', args.seq, 1);
    requireInteger('runsCap', args.runsCap, 1);
    requireInteger('keepMs', args.keepMs, 1);
  }
  if (batches.length === 0) return [];
  commands(redis);
  const size = isCluster(redis) ? 1 : RECORD_JOBS_PER_CALL;
  const groups: RecordScriptArgs[][] = [];
  for (let i = 0; i < batches.length; i += size) groups.push(batches.slice(i, i + size));
  const replies = await pipelined(
    redis,
    groups.map((group) => ({
      key: group[0]?.statsKey,
      queue: (p) => {
        const keys = group.flatMap((a) => [a.statsKey, a.instancesKey, a.runsKey, a.batchesKey]);
        const argv = group.flatMap((a) => [a.writer, String(a.seq), JSON.stringify(a.batch)]);
        const first = group[0] as RecordScriptArgs;
        (p as unknown as StatusScriptPipeline).leaseholdRecord(keys.length, ...keys, String(first.runsCap), String(first.keepMs), ...argv);
      },
    })),
  );
  return groups.flatMap((group, g) => {
    const [err, reply] = replies[g] ?? [new Error('no reply'), undefined];
    return group.map((_, j): RecordResult => {
      if (err) return { ok: false, error: err };
      const one = Array.isArray(reply) ? (reply as unknown[])[j] : undefined;
      if (typeof one === 'string' && one.startsWith('ERR')) return { ok: false, error: new LeaseholdError(ErrorCodes.redisError, `record script: ${one}`) };
      if (one !== 0 && one !== 1) {
        return { ok: false, error: new LeaseholdError(ErrorCodes.redisError, `unexpected reply from the record script: ${JSON.stringify(reply)}`) };
      }
      return { ok: true, applied: one === 1 };
    });
  });
}

/**
 * Run `prune.lua`: removes the rows of the given (gone) instances from a job's per-instance
 * hash when they were last seen before `cutoff`.
 * @returns the number of fields removed.
 */
export async function pruneScript(redis: RedisClient, args: { instancesKey: string; cutoff: string; instanceIds: string[] }): Promise<number> {
  if (args.instanceIds.length === 0) return 0;
  const reply = await commands(redis).leaseholdPrune(args.instancesKey, args.cutoff, ...args.instanceIds);
  if (typeof reply !== 'number' || !Number.isSafeInteger(reply)) {
    throw new LeaseholdError(ErrorCodes.redisError, `unexpected reply from the prune script: ${JSON.stringify(reply)}`);
  }
  return reply;
}
