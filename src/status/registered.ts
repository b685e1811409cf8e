/**
 * Which jobs the live nodes register: each node writes the ids of its jobs to a set named by
 * their digest (`<prefix>:registered:<digest>`, shared by the nodes that run the same jobs) and
 * its digest to `<prefix>:nodes`, which a node that stops removes at once. A job in no live
 * node's set left the code: it is `orphaned` (never degraded) and may be forgotten. A live node
 * whose set is not there (a node of an older version, or a set that expired) makes the answer
 * unknown for the jobs of no other set, as does a cluster with no live node: then the job's last
 * write decides, as before.
 * @module
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { pipelined } from '../redis/pipeline.js';

/** What a status read knows of the live nodes' registrations. */
export interface Registered {
  /** true: a live node registers the job; false: none does; undefined: not known. */
  (jobId: string): boolean | undefined;
}

/** One live node as the reader saw it. */
export interface LiveNode {
  /** Its digest in `<prefix>:nodes`, undefined when it has none. */
  readonly digest: string | undefined;
  /** The `jobs` field of its heartbeat: how many jobs it has. */
  readonly jobs: string | undefined;
}

/** A digest's set as read: whether it is there, and whether it holds a job. */
export interface DigestSet {
  readonly exists: boolean;
  has(jobId: string): boolean;
}

/** Registrations from the live nodes and the sets of their digests. */
export function registeredFrom(nodes: readonly LiveNode[], sets: ReadonlyMap<string, DigestSet>): Registered {
  return (jobId) => {
    // With no live node, nothing is known: the jobs' last writes decide (all nodes may be down).
    let known = nodes.length > 0;
    for (const node of nodes) {
      const set = node.digest === undefined ? undefined : sets.get(node.digest);
      if (set?.exists) {
        if (set.has(jobId)) return true;
      } else if (node.jobs !== '0') {
        known = false; // a node with jobs and no set: what it registers is not known
      }
    }
    return known ? false : undefined;
  };
}

/** The digests of the given nodes, each once (the sets to read). */
export function digestsOf(nodes: Iterable<string>, digests: Readonly<Record<string, string>>): string[] {
  const out = new Set<string>();
  for (const id of nodes) {
    const digest = digests[id];
    if (digest !== undefined) out.add(digest);
  }
  return [...out];
}

/**
 * Whether a live node registers `jobId`, read from Redis in two round trips (for `forget`).
 * Rejects when Redis fails.
 */
export async function readRegistered(redis: RedisClient, keys: Keys, jobId: string): Promise<boolean | undefined> {
  const first = await pipelined(redis, [
    { key: keys.instances, queue: (p) => p.zrange(keys.instances, 0, -1) },
    { key: keys.nodes, queue: (p) => p.hgetall(keys.nodes) },
  ]);
  const failedFirst = first.find(([err]) => err);
  if (failedFirst?.[0]) throw failedFirst[0];
  const [members, digests] = [first[0]?.[1], first[1]?.[1]];
  const ids = Array.isArray(members) ? members.filter((m): m is string => typeof m === 'string') : [];
  const byNode = digests !== null && typeof digests === 'object' ? (digests as Record<string, string>) : {};
  const sets = digestsOf(ids, byNode);
  const replies = await pipelined(redis, [
    ...ids.map((id) => ({ key: keys.instance(id), queue: (p: ChainableCommander) => p.hget(keys.instance(id), 'jobs').exists(keys.instance(id)) })),
    ...sets.map((d) => ({ key: keys.registered(d), queue: (p: ChainableCommander) => p.sismember(keys.registered(d), jobId).exists(keys.registered(d)) })),
  ]);
  const failed = replies.find(([err]) => err);
  if (failed?.[0]) throw failed[0];
  const value = (i: number): unknown => replies[i]?.[1];
  const nodes = ids.flatMap((id, i): LiveNode[] => (value(2 * i + 1) === 1 ? [{ digest: byNode[id], jobs: typeof value(2 * i) === 'string' ? (value(2 * i) as string) : undefined }] : []));
  const at = 2 * ids.length;
  const read = new Map(sets.map((d, i): [string, DigestSet] => [d, { exists: Number(value(at + 2 * i + 1)) > 0, has: () => value(at + 2 * i) === 1 }]));
  return registeredFrom(nodes, read)(jobId);
}
