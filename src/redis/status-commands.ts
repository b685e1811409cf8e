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
import { pipelined } from './pipeline.js';

interface StatusScriptCommands {
  leaseholdPrune(instances: string, cutoff: string, ...ids: string[]): Promise<unknown>;
}

/** The same commands queued on a pipeline. */
interface StatusScriptPipeline {
  leaseholdRecord(stats: string, instances: string, runs: string, batches: string, writer: string, seq: string, batch: string, runsCap: string, keepMs: string): ChainableCommander;
}

const SCRIPTS: ReadonlyArray<{ command: keyof StatusScriptCommands | keyof StatusScriptPipeline; file: string; numberOfKeys: number }> = [
  { command: 'leaseholdRecord', file: 'record.lua', numberOfKeys: 4 },
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
      redis.defineCommand(command, { numberOfKeys, lua });
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
    throw new LeaseholdError(ErrorCodes.INVALID_CONFIG, `${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}

/** What became of one batch: applied now, applied before (a retry), or an error. */
export type RecordResult = { readonly ok: true; readonly applied: boolean } | { readonly ok: false; readonly error: Error };

/**
 * Run `record.lua` for several batches (of different jobs) in one pipeline (on a Cluster, one
 * per slot): each batch is applied atomically, on its own.
 * @returns per batch, in order: `applied` true when applied now, false when the writer had
 *   applied this sequence number before; or the error of that batch.
 * @throws LeaseholdError `INVALID_CONFIG` for a bad argument (nothing is sent).
 */
export async function recordScript(redis: RedisClient, batches: readonly RecordScriptArgs[]): Promise<RecordResult[]> {
  for (const args of batches) {
    requireInteger('seq', args.seq, 1);
    requireInteger('runsCap', args.runsCap, 1);
    requireInteger('keepMs', args.keepMs, 1);
  }
  if (batches.length === 0) return [];
  commands(redis);
  const replies = await pipelined(
    redis,
    batches.map((args) => ({
      key: args.statsKey,
      queue: (p) => {
        (p as unknown as StatusScriptPipeline).leaseholdRecord(
          args.statsKey, args.instancesKey, args.runsKey, args.batchesKey,
          args.writer, String(args.seq), JSON.stringify(args.batch), String(args.runsCap), String(args.keepMs),
        );
      },
    })),
  );
  return batches.map((_, i): RecordResult => {
    const [err, reply] = replies[i] ?? [new Error('no reply'), undefined];
    if (err) return { ok: false, error: err };
    if (reply !== 0 && reply !== 1) {
      return { ok: false, error: new LeaseholdError(ErrorCodes.REDIS_ERROR, `unexpected reply from the record script: ${JSON.stringify(reply)}`) };
    }
    return { ok: true, applied: reply === 1 };
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
    throw new LeaseholdError(ErrorCodes.REDIS_ERROR, `unexpected reply from the prune script: ${JSON.stringify(reply)}`);
  }
  return reply;
}
