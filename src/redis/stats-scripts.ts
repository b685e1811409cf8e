/**
 * The typed wrappers of the stats hash's scripts: `record.lua` (the stats writer's batches),
 * `prune.lua` (the rows of gone instances) and `versions.lua` (what a status read asks of the
 * jobs it read before). See `scripts.ts` for how they are registered.
 * @module
 */
import type { ChainableCommander } from 'ioredis';
import type { LeaseholdError } from '../errors.js';
import type { RedisClient } from './connection.js';
import { isCluster, pipelined } from './pipeline.js';
import type { RecordOptions, RecordReply, RecordScriptArgs } from './record.js';
import { JOBS_PER_CALL, commands, isInteger, perJob, requireInteger, scriptPipeline, sendValid, unexpected } from './scripts.js';

/** One job's answer of `record.lua`; undefined when malformed. */
function recordReply(answer: unknown): RecordReply | undefined {
  if (answer === 0) return { applied: false, streakBefore: null };
  if (!Array.isArray(answer) || answer[0] !== 'applied' || !isInteger(answer[1])) return undefined;
  return { applied: true, streakBefore: answer[1] >= 0 ? answer[1] : null };
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
          const keys = group.flatMap((a) => [a.statsKey, a.instancesKey, a.runsKey, a.stateKey, a.writersKey, a.leaseKey]);
          const argv = group.flatMap((a) => [a.writer, String(a.seq), JSON.stringify(a.batch)]);
          scriptPipeline(p).leaseholdRecord(keys.length, ...keys, String(options.runsCap), String(options.keepMs), ...argv);
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
 * Queues one call of `versions.lua` for `jobs` on `p`, a pipeline of a single Redis (the jobs'
 * keys lie in many slots) made after `commands` registered the scripts. Its reply is read by {@link versionsReply}.
 */
export function queueVersions(p: ChainableCommander, jobs: readonly VersionsJob[]): void {
  const keys = jobs.flatMap((j) => [j.statsKey, j.leaseKey]);
  const argv = jobs.flatMap((j) => [j.version, j.seenAt, j.lease ? '1' : '0']);
  scriptPipeline(p).leaseholdVersions(keys.length, ...keys, ...argv);
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
