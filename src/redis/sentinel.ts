/**
 * Connections to a master named by Sentinels: each role's options, and the connection that is
 * opened again when ioredis ends it at a failover.
 * @module
 */
import { Redis, type Callback, type RedisOptions } from 'ioredis';
import { systemClock } from '../clock.js';
import type { NodeList } from './target.js';
import { reconnectDelay, roleOptions, type RedisRole } from './roles.js';

/**
 * Options for a master behind Sentinel. A write refused with READONLY (the server was
 * demoted, and the Sentinels have not told yet) drops the connection, which then asks the
 * Sentinels for the master again; so does a failover announced by the Sentinels.
 */
export function sentinelRoleOptions(role: RedisRole, commandTimeoutMs: number | undefined, list: NodeList, name: string): RedisOptions {
  const { tls, ...auth } = list.options;
  return {
    ...auth,
    sentinels: list.nodes.map((n) => ({ host: n.host, port: n.port })),
    name,
    ...(tls ? { tls, enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
    sentinelRetryStrategy: reconnectDelay,
    failoverDetector: true,
    reconnectOnError: (err: Error) => (err.message.startsWith('READONLY') ? 1 : false),
    ...roleOptions(role, commandTimeoutMs),
  };
}

/**
 * A connection to a master named by Sentinels, opened again when ioredis ends it without being
 * asked to. ioredis (5.11) ends a Sentinel connection for good when the Sentinels announce a
 * failover while the connection is asking them for the master to reconnect to: its failover
 * detector closes the connector in the middle of that connect, which then fails with
 * "Connection is closed." and sets the status `end`, whatever the retry strategy says. The node
 * would never reach Redis again on it (seen in the master-kill measurement of
 * `scaleout-sentinel.test.ts`: a node's stats connection ended so, and the nodes ran no tick for
 * 30 s). A connection that ends without its own `disconnect()` or `quit()` having been called is
 * opened again after the reconnection delay; a connect that fails ends it again, and it is tried
 * again. One closed by either stays closed, whoever closed it. A duplicate is such a connection
 * too.
 */
export class SentinelRedis extends Redis {
  #closed = false;
  #attempts = 0;
  readonly #onReopen: ((failure?: unknown) => void) | undefined;

  constructor(options: RedisOptions, onReopen: ((failure?: unknown) => void) | undefined) {
    super(options);
    this.#onReopen = onReopen;
    this.on('ready', () => (this.#attempts = 0));
    this.on('end', () => {
      if (this.#closed) return;
      this.#attempts += 1;
      systemClock.setTimer(
        () => {
          if (this.#closed || this.status !== 'end') return;
          this.#onReopen?.();
          // A failure sets the status `end` again, which comes back here and tries again.
          this.connect().catch((err: unknown) => this.#onReopen?.(err));
        },
        reconnectDelay(this.#attempts),
        true,
      );
    });
  }

  /** Whether this connection is opened again when it ends (it is, until its own disconnect() or quit()). */
  get reopens(): boolean {
    return !this.#closed;
  }

  override disconnect(reconnect = false): void {
    if (!reconnect) this.#closed = true;
    super.disconnect(reconnect);
  }

  override quit(callback?: Callback<'OK'>): Promise<'OK'> {
    this.#closed = true;
    return super.quit(callback);
  }

  /** A copy is opened again as this one is (a BullMQ worker duplicates its connection for its blocking commands). */
  override duplicate(override?: Partial<RedisOptions>): Redis {
    return new SentinelRedis({ ...this.options, ...override }, this.#onReopen);
  }
}

