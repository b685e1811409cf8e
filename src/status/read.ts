/**
 * Reads the cluster's status straight from Redis in two pipelined round trips, whatever the
 * number of jobs: first the job set, the settings hash, the instance set and Redis time;
 * then every job's stats, per-instance rows (instance jobs) and lease (installation jobs),
 * and every instance's heartbeat. On a Redis Cluster each round trip is one pipeline per
 * slot, sent together.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';
import { pipelined, type PipelineReply, type PipelinedCommand } from '../redis/pipeline.js';
import type { RecentRun } from './batch.js';
import {
  DEFAULT_FAILING_STREAK,
  instanceStatus,
  jobSettings,
  jobStatus,
  type ClusterStatus,
  type InstanceStatus,
  type JobDetail,
  type ModelContext,
} from './model.js';

/** Options of the readers. */
export interface ReadOptions {
  /** Streak length from which a job is degraded (default {@link DEFAULT_FAILING_STREAK}). */
  readonly failingStreak?: number;
  /**
   * Scopes seen by an earlier read (kept up to date by this one): a job known to be an
   * installation job is read without per-instance rows, an instance job without a lease.
   */
  readonly scopes?: Map<string, string>;
}

/** Commands of one read, each queued with the key that decides its slot. */
class Reads {
  readonly commands: PipelinedCommand[] = [];

  add(key: string | undefined, queue: PipelinedCommand['queue']): this {
    this.commands.push({ key, queue });
    return this;
  }
}

async function exec(redis: RedisClient, reads: Reads): Promise<unknown[]> {
  const replies: PipelineReply[] = await pipelined(redis, reads.commands);
  return replies.map(([err, value]) => {
    if (!err) return value;
    // A key of the wrong type (an operator's mistake) reads as empty; anything else is Redis failing.
    if (err.name === 'ReplyError' && /^WRONGTYPE/.test(err.message)) return null;
    throw new LeaseholdError(ErrorCodes.redisError, `reading the status from Redis failed: ${err.message}`, { cause: err });
  });
}

function hash(v: unknown): Record<string, string> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function redisTime(v: unknown): number {
  const [s, us] = strings(v);
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

const INSTANCE_ID = /^[^{}\s]{1,128}$/;

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface Base {
  nowMs: number;
  jobIds: string[];
  settings: Record<string, string>;
  members: string[];
}

async function readBase(redis: RedisClient, keys: Keys, jobId?: string): Promise<Base> {
  const r = new Reads().add(undefined, (p) => p.time()).add(keys.instances, (p) => p.zrange(keys.instances, 0, -1));
  if (jobId === undefined) r.add(keys.jobs, (p) => p.smembers(keys.jobs));
  else r.add(keys.jobs, (p) => p.sismember(keys.jobs, jobId));
  r.add(keys.settings, (p) => p.hgetall(keys.settings));
  const [time, members, jobs, settings] = await exec(redis, r);
  // An id defineJob refuses (an operator's typo in the job set) is left out.
  const jobIds = jobId === undefined ? strings(jobs).filter((id) => JOB_ID_PATTERN.test(id)).sort(byId) : jobs === 1 ? [jobId] : [];
  return { nowMs: redisTime(time), members: strings(members).filter((id) => INSTANCE_ID.test(id)), jobIds, settings: hash(settings) };
}

function liveInstances(members: string[], replies: unknown[]): { live: Set<string>; instances: InstanceStatus[] } {
  const live = new Set<string>();
  const instances: InstanceStatus[] = [];
  members.forEach((id, i) => {
    const h = hash(replies[i]);
    if (Object.keys(h).length === 0) return; // the heartbeat expired: the node is gone
    live.add(id);
    instances.push(instanceStatus(id, h));
  });
  instances.sort((a, b) => byId(a.id, b.id));
  return { live, instances };
}

/** Every job and every live instance, as `GET /manage/jobs` returns them. */
export async function readCluster(redis: RedisClient, keys: Keys, opts: ReadOptions = {}): Promise<ClusterStatus> {
  const base = await readBase(redis, keys);
  const r = new Reads();
  // What is read per job: stats always; per-instance rows unless it is known to be an
  // installation job; the lease unless it is known to be an instance job.
  const plan = base.jobIds.map((id) => {
    const scope = opts.scopes?.get(id);
    const rows = scope !== 'installation';
    const lease = scope !== 'instance';
    const stats = keys.stats(id);
    r.add(stats, (p) => p.hgetall(stats));
    if (rows) r.add(stats, (p) => p.hgetall(keys.instanceStats(id)));
    if (lease) r.add(stats, (p) => p.get(keys.lease(id)).pttl(keys.lease(id)));
    return { id, rows, lease };
  });
  for (const m of base.members) r.add(keys.instance(m), (p) => p.hgetall(keys.instance(m)));
  const replies = await exec(redis, r);
  let at = 0;
  const raw = plan.map(({ id, rows, lease }) => {
    const stats = hash(replies[at++]);
    const instanceFields = rows ? hash(replies[at++]) : {};
    const value = lease ? replies[at++] : null;
    const pttl = lease ? replies[at++] : null;
    if (opts.scopes && stats['scope']) opts.scopes.set(id, stats['scope']);
    return {
      id,
      stats,
      instanceFields,
      settings: jobSettings(base.settings, id),
      lease: typeof value === 'string' ? value : null,
      leasePttl: typeof pttl === 'number' ? pttl : null,
    };
  });
  const { live, instances } = liveInstances(base.members, replies.slice(at));
  const ctx: ModelContext = { nowMs: base.nowMs, live, failingStreak: opts.failingStreak ?? DEFAULT_FAILING_STREAK };
  return { generatedAt: new Date(base.nowMs).toISOString(), jobs: raw.map((r) => jobStatus(r, ctx)), instances };
}

function parseRun(text: string): RecentRun | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' ? (v as RecentRun) : undefined;
  } catch {
    return undefined; // not written by leasehold: left out
  }
}

/** One job with its recent runs; undefined when no node ever registered it. */
export async function readJob(redis: RedisClient, keys: Keys, jobId: string, opts: ReadOptions = {}): Promise<JobDetail | undefined> {
  const base = await readBase(redis, keys, jobId);
  if (base.jobIds.length === 0) return undefined;
  const reads = new Reads().add(keys.stats(jobId), (p) => {
    p.hgetall(keys.stats(jobId)).hgetall(keys.instanceStats(jobId)).get(keys.lease(jobId)).pttl(keys.lease(jobId));
    p.lrange(keys.runs(jobId), 0, -1);
  });
  for (const m of base.members) reads.add(keys.instance(m), (p) => p.hgetall(keys.instance(m)));
  const r = await exec(redis, reads);
  const { live } = liveInstances(base.members, r.slice(5));
  const ctx: ModelContext = { nowMs: base.nowMs, live, failingStreak: opts.failingStreak ?? DEFAULT_FAILING_STREAK };
  const status = jobStatus(
    {
      id: jobId,
      stats: hash(r[0]),
      instanceFields: hash(r[1]),
      settings: jobSettings(base.settings, jobId),
      lease: typeof r[2] === 'string' ? r[2] : null,
      leasePttl: typeof r[3] === 'number' ? r[3] : null,
    },
    ctx,
  );
  const recentRuns = strings(r[4]).flatMap((t) => parseRun(t) ?? []);
  return { ...status, recentRuns };
}
