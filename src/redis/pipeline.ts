/**
 * Pipelines that work on a single Redis and on a Redis Cluster alike. A Cluster takes a
 * pipeline only when all its keys live on one node, and leasehold's reads and writes mix the
 * keys of many jobs (each in its own slot) with cluster-wide keys. So on a Cluster the
 * commands are split by hash slot group (a key's hash tag, or the whole key without one) into
 * pipelines sent together; on a single Redis they stay one pipeline.
 * @module
 */
import { Cluster, type ChainableCommander } from 'ioredis';
import type { RedisClient } from './connection.js';

/** The reply to one pipelined command: its error, or its value. */
export type PipelineReply = [Error | null, unknown];

/** Commands to pipeline that share one slot: the key that decides it, and how to queue them. */
export interface PipelinedCommand {
  /** The commands' (first) key; undefined for commands without a key (`TIME`). */
  readonly key: string | undefined;
  /** Queues one or more commands on `p`. Every key they name must share `key`'s slot. */
  queue(p: ChainableCommander): void;
}

/**
 * What decides a key's Cluster slot: the part between the first `{` and the next `}` when
 * that is not empty, else the whole key (the Redis Cluster specification's hash tag rule).
 * Keys with the same slot key are in the same slot.
 */
export function slotKey(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** True for a Redis Cluster client. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

async function execOne(p: ChainableCommander): Promise<PipelineReply[]> {
  const n = p.length;
  try {
    const replies = (await p.exec()) as PipelineReply[] | null;
    if (replies && replies.length === n) return replies;
    const missing = new Error('no reply from Redis');
    return Array.from({ length: n }, (_, i) => replies?.[i] ?? [missing, undefined]);
  } catch (err) {
    // The pipeline failed as a whole (the connection is not ready): every command has that error.
    const error = err instanceof Error ? err : new Error(String(err));
    return Array.from({ length: n }, () => [error, undefined]);
  }
}

/**
 * Runs the commands pipelined and resolves to their replies, in the order they were queued.
 * Never rejects: a command that failed, or whose pipeline failed, has its error in its reply.
 */
export async function pipelined(redis: RedisClient, commands: readonly PipelinedCommand[]): Promise<PipelineReply[]> {
  if (commands.length === 0) return [];
  if (!isCluster(redis)) {
    const p = redis.pipeline();
    for (const c of commands) c.queue(p);
    return execOne(p);
  }
  const groups = new Map<string, number[]>();
  commands.forEach((c, i) => {
    // Commands without a key go with the first group (any node answers them).
    const slot = c.key === undefined ? (groups.keys().next().value ?? '') : slotKey(c.key);
    const group = groups.get(slot);
    if (group) group.push(i);
    else groups.set(slot, [i]);
  });
  const perCommand: PipelineReply[][] = new Array<PipelineReply[]>(commands.length);
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const p = redis.pipeline();
      const counts = indexes.map((i) => {
        const before = p.length;
        commands[i]?.queue(p);
        return p.length - before;
      });
      const replies = await execOne(p);
      let at = 0;
      indexes.forEach((i, j) => {
        const n = counts[j] ?? 0;
        perCommand[i] = replies.slice(at, at + n);
        at += n;
      });
    }),
  );
  return perCommand.flat();
}
