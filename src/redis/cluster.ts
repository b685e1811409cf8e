/**
 * Connections to a Redis Cluster: each role's options for the cluster and its nodes, and the
 * nodes dialled as soon as they are known.
 * @module
 */
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { reconnectDelay, roleOptions, type RedisRole } from './roles.js';

/**
 * Cluster options for a role. The role's options apply to every node's connection; a
 * fail-fast role also gets no offline queue at the cluster level, so a command fails at once
 * while the cluster is away. Redirections (MOVED, ASK) and retries during a failover stay
 * bounded (the command timeout, which counts from the command's first send, and ioredis's
 * limit of 16 redirections).
 */
export function clusterRoleOptions(role: RedisRole, commandTimeoutMs: number | undefined, nodeOptions: RedisOptions = {}): ClusterOptions {
  const { retryStrategy: _perNode, enableOfflineQueue: roleQueue, ...perNode } = roleOptions(role, commandTimeoutMs);
  // A Cluster's subscriber is ioredis's own connection, which resubscribes by itself; the
  // subscription waits in the cluster's offline queue until the slots are known.
  const enableOfflineQueue = role === 'sub' ? true : roleQueue;
  const { host: _host, port: _port, db: _db, ...auth } = nodeOptions;
  return {
    enableOfflineQueue,
    // No auto-pipelining on a Cluster: an auto-pipeline mixes the slots of one node, and when a
    // failover moves them, ioredis follows the MOVED replies of a pipeline only when they all
    // name the same slot; the claims in it would fail instead of being redirected.
    enableAutoPipelining: false,
    // The ready check (CLUSTER INFO) cannot pass without an offline queue: its node is still
    // connecting. Fail-fast connections are ready once they know the slots.
    enableReadyCheck: enableOfflineQueue === true,
    clusterRetryStrategy: reconnectDelay,
    // Node connections are not redialled on their own: a node that is away is found again
    // (or replaced by its promoted replica) through the slot map, refreshed this often.
    slotsRefreshInterval: 2_000,
    slotsRefreshTimeout: 1_000,
    redisOptions: { ...auth, ...perNode },
    lazyConnect: false,
  };
}

/**
 * Opens `cluster`'s node connections as soon as the nodes are known. Without this a node is
 * dialled by its first command, and a second command sent while it connects is refused (no
 * offline queue). Replicas are dialled too (ioredis marks their connections READONLY): when
 * one is promoted, its connection is ready for the job's next claim.
 */
export function dialNodes(cluster: Cluster, onDialError: ((err: unknown) => void) | undefined): Cluster {
  const dial = (node: Redis): void => {
    // A failed dial is retried through the slot map: it is only told.
    if (node.status === 'wait') node.connect().catch((err: unknown) => onDialError?.(err));
  };
  for (const node of cluster.nodes('all')) dial(node);
  cluster.on('+node', dial);
  return cluster;
}

