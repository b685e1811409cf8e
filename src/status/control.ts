/**
 * Control messages between nodes on the pub/sub channel `<prefix>:control`: JSON objects
 * `{"type":"settings"}` (the settings hash changed: read it now) and
 * `{"type":"run","jobId":"<id>"}` (run an instance job now on every node that has it).
 * @module
 */
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from 'pino';

/** A control message. */
export type ControlMessage = { readonly type: 'settings'; readonly jobId?: string } | { readonly type: 'run'; readonly jobId: string };

/** Parses a message; undefined when it is not one leasehold sends. */
export function parseControl(text: string): ControlMessage | undefined {
  if (text.length > 4_096) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { type, jobId } = value as { type?: unknown; jobId?: unknown };
  if (type === 'settings') return typeof jobId === 'string' ? { type, jobId } : { type };
  if (type === 'run' && typeof jobId === 'string' && jobId !== '') return { type, jobId };
  return undefined;
}

/** Publishes a control message; resolves to the number of nodes that received it. */
export async function publishControl(redis: RedisClient, channel: string, message: ControlMessage): Promise<number> {
  return redis.publish(channel, JSON.stringify(message));
}

/**
 * Subscribes `sub` (a `sub` connection, used for nothing else) to `channel` once it is
 * ready; resubscribes after reconnects. Resolves once subscribed.
 */
export function subscribeControl(sub: RedisClient, channel: string, logger: Logger, onMessage: (m: ControlMessage) => void): Promise<void> {
  sub.on('message', (ch: string, text: string) => {
    if (ch !== channel) return;
    const m = parseControl(text);
    if (!m) {
      logger.debug({ channel }, 'ignoring a control message that is not leasehold\'s');
      return;
    }
    try {
      onMessage(m);
    } catch (err) {
      logger.error({ err, type: m.type }, 'handling a control message failed');
    }
  });
  // Subscribing before the connection is ready races with ioredis's own handshake (its ready
  // check is refused in subscriber mode); after the first subscription, ioredis resubscribes.
  const subscribe = (): Promise<void> => sub.subscribe(channel).then(() => undefined);
  if (sub.status === 'ready') return subscribe();
  return new Promise((resolve, reject) => sub.once('ready', () => subscribe().then(resolve, reject)));
}
