/**
 * Forgetting a job that left the code: its keys are removed from Redis, but only while no
 * live node registers it (it is `orphaned`: no node wrote its stats within
 * {@link ACTIVE_WITHIN_MS}), so a job still in some node's code is never wiped.
 * @module
 */
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { pipelined } from '../redis/pipeline.js';
import { ACTIVE_WITHIN_MS } from './model.js';
import { SETTING_FIELDS } from './settings.js';

/** What {@link forgetJob} did. */
export type ForgetResult =
  | { readonly kind: 'forgotten'; readonly keys: number }
  | { readonly kind: 'unknown' }
  /** A live node registers it: nothing was removed. `seenAt` is when a node last wrote it. */
  | { readonly kind: 'live'; readonly seenAt: string };

/**
 * Removes a job's stats, per-instance rows, recent runs, claim state, batches, its settings
 * fields and its id from the job set, when no live node registers it.
 * @throws LeaseholdError `redisError` when Redis fails.
 */
export async function forgetJob(redis: RedisClient, keys: Keys, jobId: string): Promise<ForgetResult> {
  try {
    const [time, seenAt, member] = await Promise.all([redis.time(), redis.hget(keys.stats(jobId), 'seenAt'), redis.sismember(keys.jobs, jobId)]);
    const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    if (member !== 1 && seenAt === null) return { kind: 'unknown' };
    const seen = seenAt === null ? NaN : Date.parse(seenAt);
    if (Number.isFinite(seen) && nowMs - seen <= ACTIVE_WITHIN_MS) return { kind: 'live', seenAt: seenAt ?? '' };
    const perJob = [keys.stats(jobId), keys.instanceStats(jobId), keys.runs(jobId), keys.state(jobId), keys.batches(jobId)];
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
