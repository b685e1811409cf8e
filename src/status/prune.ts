/**
 * Forgets the per-instance rows of instances that are gone (their heartbeat expired and
 * their row was not written for {@link FORGET_ROWS_AFTER_MS}), so instance jobs' hashes do
 * not grow with every node ever started. Cluster totals are in the stats hash and stay.
 * @module
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { pipelined } from '../redis/pipeline.js';
import { pruneScript } from '../redis/stats-scripts.js';

/** Rows of a gone instance are kept this long after its last write, in ms. */
const FORGET_ROWS_AFTER_MS = 3_600_000;
/** How often a node prunes the rows of its instance jobs, in ms. */
export const PRUNE_EVERY_MS = 10 * 60_000;

/** Removes gone instances' rows from the given instance jobs; resolves to the fields removed. */
export async function pruneInstanceRows(redis: RedisClient, keys: Keys, jobIds: string[], nowMs: number, maxAgeMs = FORGET_ROWS_AFTER_MS): Promise<number> {
  if (jobIds.length === 0) return 0;
  const members = await redis.zrange(keys.instances, 0, -1);
  const replies = await pipelined(redis, [
    ...members.map((m) => ({ key: keys.instance(m), queue: (p: ChainableCommander) => p.exists(keys.instance(m)) })),
    ...jobIds.map((id) => ({ key: keys.instanceStats(id), queue: (p: ChainableCommander) => p.hkeys(keys.instanceStats(id)) })),
  ]);
  const failed = replies.find(([err]) => err);
  if (failed?.[0]) throw failed[0];
  const live = new Set(members.filter((_, i) => replies[i]?.[1] === 1));
  const cutoff = new Date(nowMs - maxAgeMs).toISOString();
  let removed = 0;
  for (const [i, jobId] of jobIds.entries()) {
    const fields = replies[members.length + i]?.[1];
    if (!Array.isArray(fields)) continue;
    const gone = new Set<string>();
    for (const f of fields as string[]) {
      const dot = f.lastIndexOf('.');
      const id = dot > 0 ? f.slice(0, dot) : '';
      if (id && !live.has(id)) gone.add(id);
    }
    if (gone.size > 0) removed += await pruneScript(redis, { instancesKey: keys.instanceStats(jobId), statsKey: keys.stats(jobId), cutoff, instanceIds: [...gone] });
  }
  return removed;
}
