/**
 * Every Redis connection of a process is made here, by name, with its role's options: the
 * parts below take the connections they are handed (or, for those made on first use, a function
 * that makes one) and never open one themselves.
 *
 * | name      | role    | command timeout | made by / for                                                        |
 * |-----------|---------|-----------------|----------------------------------------------------------------------|
 * | `lease`   | `lease` | 2 s, fail fast  | a node with Redis: its coordinator's claims, extensions and releases |
 * | `status`  | `stats` | 2 s, fail fast  | a node: the stats writer, registry, settings, status reads, actions  |
 * | `control` | `sub`   | none            | a node, `leasehold mcp`: the control channel and settings tracking   |
 * | `board`   | `stats` | 5 s, fail fast  | a node, at its first loop or worker executor: the executors board   |
 * | `queue`   | `queue` | none, waits     | each queue executor: its BullMQ queue, worker and queue events       |
 * | `command` | `stats` | 5 s, fail fast  | `leasehold status`, `forget` and `mcp`: reads and actions            |
 *
 * Each is named `leasehold-<role>` in `CLIENT LIST`. Each gets an error listener here (a debug
 * line naming it; ioredis reconnects by itself), and the last error is kept for the messages of
 * the commands. {@link Connections.close} closes them all, once every part that uses them has
 * stopped: a node closes them after its runs are recorded, its tasks ended and its stats
 * flushed (`create/node.ts`); a queue executor has closed its own by then (its close is bounded).
 * @module
 */
import type { Logger } from '../logger.js';
import { errorMessage } from '../errors.js';
import { closeRedis, createRedis, type RedisClient } from '../redis/connection.js';
import type { RedisRole } from '../redis/roles.js';
import type { RedisTarget } from '../redis/target.js';

/** Where Redis is: a URL, a target (one server, a Cluster, a master behind Sentinel), or a client to duplicate. */
export type RedisWhere = { readonly url: string } | { readonly target: RedisTarget } | { readonly client: RedisClient };

/** The connections a process makes; see the module comment. */
export type ConnectionName = 'lease' | 'status' | 'control' | 'board' | 'queue' | 'command';

const CONNECTIONS: Readonly<Record<ConnectionName, { readonly role: RedisRole; readonly commandTimeoutMs?: number }>> = {
  lease: { role: 'lease' },
  // Shorter than a `stats` connection's default: a status read or a flush gives up within 2 s.
  status: { role: 'stats', commandTimeoutMs: 2_000 },
  control: { role: 'sub' },
  board: { role: 'stats' },
  queue: { role: 'queue' },
  command: { role: 'stats' },
};

/** The connections of one process, to one Redis. */
export interface Connections {
  /** A new connection for `name`; `label` says whose it is in its log lines (a queue executor's name). */
  open(name: ConnectionName, label?: string): RedisClient;
  /** The last error a connection made here reported, for a message when Redis is unreachable. */
  lastError(): string | undefined;
  /** Closes every connection made here (QUIT when ready, then disconnect); never throws. */
  close(): Promise<void>;
}

/**
 * The connection factory of a process. `logger` gets a debug line for each connection error
 * (none without one: a one-shot command keeps only the last error for its message).
 * @throws LeaseholdError `invalidConfig` from {@link Connections.open} for a bad address.
 */
export function redisConnections(where: RedisWhere, logger?: Logger): Connections {
  const made: Array<{ readonly name: ConnectionName; readonly label: string | undefined; readonly conn: RedisClient }> = [];
  let last: string | undefined;
  const told = (name: ConnectionName, label: string | undefined, what: string) => (err: unknown): void => {
    last = errorMessage(err);
    logger?.debug({ err: { message: last }, connection: name, ...(label ? { executor: label } : {}) }, '%s connection: %s', name, what);
  };
  return {
    open(name, label) {
      const spec = CONNECTIONS[name];
      const conn = createRedis({
        ...where,
        role: spec.role,
        ...(spec.commandTimeoutMs !== undefined ? { commandTimeoutMs: spec.commandTimeoutMs } : {}),
        onDialError: told(name, label, 'a Cluster node could not be dialled yet; dialled again through the slot map'),
        onReopen: (failure) => {
          if (failure === undefined) logger?.info({ connection: name, ...(label ? { executor: label } : {}) }, '%s connection: the Sentinel client ended it during a failover; opening it again', name);
          else told(name, label, 'opening it again failed; tried again after the reconnection delay')(failure);
        },
      });
      conn.on('error', told(name, label, 'error; reconnecting'));
      made.push({ name, label, conn });
      return conn;
    },
    lastError: () => last,
    async close() {
      const all = made.splice(0);
      await Promise.all(all.map((c) => closeRedis(c.conn, told(c.name, c.label, 'QUIT failed at close; disconnected'))));
    },
  };
}
