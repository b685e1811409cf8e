/**
 * Forgetting a job that left the code: its keys are removed from Redis, but only while no
 * live node registers it (it is `orphaned`: in no live node's set of job ids, or, where a live
 * node's set is not known, no node wrote its stats within {@link ACTIVE_WITHIN_MS}), so a job
 * still in some node's code is never wiped.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { pipelined } from '../redis/pipeline.js';
import { ACTIVE_WITHIN_MS } from './model.js';
import { SETTING_FIELDS, isWrongType } from './settings.js';
import { readRegistered } from './registered.js';

/** What {@link forgetJob} did. */
export type ForgetResult =
  | { readonly kind: 'forgotten'; readonly keys: number }
  | { readonly kind: 'unknown' }
  /**
   * Nothing was removed: a live node registers it (`registered`), or which jobs the live nodes
   * have is not known (no node is live, or one of an older version is) and a node wrote it
   * within {@link ACTIVE_WITHIN_MS}. `seenAt` is when a node last wrote it.
   */
  | { readonly kind: 'live'; readonly registered: boolean; readonly seenAt: string };

/** Why {@link forgetJob} refused, for a person: the CLI's line and the HTTP answer's message. */
export function forgetRefusal(jobId: string, r: Extract<ForgetResult, { kind: 'live' }>): string {
  const job = `job ${JSON.stringify(jobId)}`;
  if (r.registered) return `${job} is registered by a live node (last written ${r.seenAt}); remove it from the code of every node first`;
  const until = new Date(Date.parse(r.seenAt) + ACTIVE_WITHIN_MS).toISOString();
  return `${job} may still be in a node's code: no live node says which jobs it has, and a node wrote the job at ${r.seenAt}, less than ${ACTIVE_WITHIN_MS / 60_000} minutes ago; remove it from the code of every node first, or try again after ${until}`;
}

/** The stats hash's `seenAt`, or null when it has none or the key holds another type (it is to be removed). */
async function seenAtOf(redis: RedisClient, key: string): Promise<string | null> {
  try {
    return await redis.hget(key, 'seenAt');
  } catch (err) {
    if (isWrongType(err)) return null;
    throw err;
  }
}

/**
 * Removes a job's stats, per-instance rows, recent runs, claim state, lease, writers hash, its
 * settings fields and its id from the job set, when no live node registers it (whatever type
 * its keys hold: forgetting repairs a job whose keys something else overwrote).
 * @throws LeaseholdError `redisError` when Redis fails.
 */
export async function forgetJob(redis: RedisClient, keys: Keys, jobId: string): Promise<ForgetResult> {
  try {
    const [time, seenAt, member] = await Promise.all([redis.time(), seenAtOf(redis, keys.stats(jobId)), redis.sismember(keys.jobs, jobId)]);
    const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    if (member !== 1 && seenAt === null) return { kind: 'unknown' };
    const seen = seenAt === null ? NaN : Date.parse(seenAt);
    // A live node registers it; where that is not known (a node of an older version), a node wrote it lately.
    const registered = await readRegistered(redis, keys, jobId);
    if (registered === true) return { kind: 'live', registered: true, seenAt: seenAt ?? '' };
    if (registered === undefined && Number.isFinite(seen) && nowMs - seen <= ACTIVE_WITHIN_MS) return { kind: 'live', registered: false, seenAt: seenAt ?? '' };
    // No live node has the job, so no run of it holds its lease.
    const perJob = [keys.stats(jobId), keys.instanceStats(jobId), keys.runs(jobId), keys.state(jobId), keys.lease(jobId), keys.writers(jobId)];
    const replies = await pipelined(redis, [
      { key: keys.stats(jobId), queue: (p) => p.del(...perJob) },
      { key: keys.jobs, queue: (p) => p.srem(keys.jobs, jobId) },
      { key: keys.settings, queue: (p) => p.hdel(keys.settings, ...SETTING_FIELDS.map((f) => `${jobId}.${f}`)) },
    ]);
    const failed = replies.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
    return { kind: 'forgotten', keys: Number(replies[0]?.[1] ?? 0) };
  } catch (err) {
    throw new LeaseholdError(ErrorCodes.redisError, `forgetting job ${JSON.stringify(jobId)} failed: ${errorMessage(err)}`, { cause: err });
  }
}
