/**
 * The pieces every read of the status is made of: commands queued with the key that decides
 * their slot and sent in pipelines, their replies read leniently (a key of the wrong type reads
 * as empty), and the base a read starts with (Redis time, the job set, the settings, the
 * instances and their digests, their heartbeats).
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { pipelined, type PipelineReply, type PipelinedCommand } from '../redis/pipeline.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';
import { instanceStatus } from './build.js';
import type { InstanceStatus } from './model.js';
import type { LiveNode } from './registered.js';

/** Commands of one read, each queued with the key that decides its slot. */
export class Reads {
  readonly commands: PipelinedCommand[] = [];

  add(key: string | undefined, queue: PipelinedCommand['queue']): this {
    this.commands.push({ key, queue });
    return this;
  }
}

/** The reply of a read of a key of the wrong type (an operator's mistake): it reads as empty. */
const WRONG_TYPE: unique symbol = Symbol('wrong type');

/** Sends `reads` in pipelines and answers their replies in order; a key of the wrong type reads as {@link WRONG_TYPE}. */
export async function exec(redis: RedisClient, reads: Reads): Promise<unknown[]> {
  const replies: PipelineReply[] = await pipelined(redis, reads.commands);
  return replies.map(([err, value]) => {
    if (!err) return value;
    // A key of the wrong type (an operator's mistake) reads as empty; anything else is Redis failing.
    if (err.name === 'ReplyError' && /^WRONGTYPE/.test(err.message)) return WRONG_TYPE;
    throw new LeaseholdError(ErrorCodes.redisError, `reading the status from Redis failed: ${err.message}`, { cause: err });
  });
}

/** A hash's reply; empty when it is anything else. */
export function hash(v: unknown): Record<string, string> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {};
}

/** The strings of an array reply. */
export function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** An HMGET's reply: its values, undefined where a field is absent. */
export function fieldsOf(v: unknown): Array<string | undefined> {
  return Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : undefined)) : [];
}

/** A TIME reply as epoch ms. */
function redisTime(v: unknown): number {
  const [s, us] = strings(v);
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

const INSTANCE_ID = /^[^{}\s]{1,128}$/;

/** Orders ids as the status lists them. */
function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What every read starts with: Redis time, the job set, the settings, the instances and their digests. */
export interface Base {
  nowMs: number;
  jobIds: string[];
  settings: Record<string, string>;
  members: string[];
  /** `<prefix>:nodes`: instance id to the digest of its jobs. */
  digests: Record<string, string>;
  /** The settings hash holds a value of another type. */
  settingsCorrupt: boolean;
}

/** Reads the {@link Base}, with every job id or with `jobId` alone (when it is in the job set). */
export async function readBase(redis: RedisClient, keys: Keys, jobId?: string): Promise<Base> {
  const r = new Reads().add(undefined, (p) => p.time()).add(keys.instances, (p) => p.zrange(keys.instances, 0, -1));
  if (jobId === undefined) r.add(keys.jobs, (p) => p.smembers(keys.jobs));
  else r.add(keys.jobs, (p) => p.sismember(keys.jobs, jobId));
  r.add(keys.settings, (p) => p.hgetall(keys.settings)).add(keys.nodes, (p) => p.hgetall(keys.nodes));
  const [time, members, jobs, settings, digests] = await exec(redis, r);
  // An id defineJob refuses (an operator's typo in the job set) is left out.
  const jobIds = jobId === undefined ? strings(jobs).filter((id) => JOB_ID_PATTERN.test(id)).sort(byId) : jobs === 1 ? [jobId] : [];
  return { nowMs: redisTime(time), members: strings(members).filter((id) => INSTANCE_ID.test(id)), jobIds, settings: hash(settings), digests: hash(digests), settingsCorrupt: settings === WRONG_TYPE };
}

/** The live nodes (heartbeat replies in `members` order) with their digests and job counts. */
export function liveNodes(base: Base, heartbeats: unknown[]): LiveNode[] {
  return base.members.flatMap((id, i) => {
    const h = hash(heartbeats[i]);
    return Object.keys(h).length === 0 ? [] : [{ digest: base.digests[id], jobs: h['jobs'] }];
  });
}

/** The instances whose heartbeat is alive (replies in `members` order), sorted by id. */
export function liveInstances(members: string[], replies: unknown[]): { live: Set<string>; instances: InstanceStatus[] } {
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

/** A job's lease as its GET and PTTL replies give it. */
export function leaseOf(value: unknown, pttl: unknown): { lease: string | null; leasePttl: number | null } {
  return { lease: typeof value === 'string' ? value : null, leasePttl: typeof pttl === 'number' ? pttl : null };
}
