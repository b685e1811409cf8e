/**
 * Control messages between nodes on the pub/sub channel `<prefix>:control`: JSON objects
 * `{"type":"settings"}` (the settings hash changed: read it now),
 * `{"type":"run","jobId":"<id>"}` (run a job now: an instance job on every node that has it,
 * an installation job once cluster-wide — every node that has it tries, and its manual claim
 * decides; with a `requestId`, exactly once per request, without one, requests within a second
 * of each other are one),
 * `{"type":"cancel","jobId":"<id>"}` (abort the job's run in progress, wherever it runs, with
 * reason `cancelled`; with a `requestId`, each node that cancelled one answers
 * `{"type":"cancelled","jobId":"<id>","requestId":"...","instanceId":"..."}`),
 * `{"type":"left","instanceId":"<id>"}` (a node stopped and removed its heartbeat: the others
 * read the live nodes now, so the ticks it ranked first or second are claimed at once),
 * `{"type":"joined","instanceId":"<id>"}` (a node wrote its first heartbeat: the others read the
 * live nodes now, so they rank its ticks as it does from its first tick).
 * @module
 */
import { Cluster, type Redis } from 'ioredis';
import type { Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis/connection.js';
import { errorMessage } from '../errors.js';
import { SETTINGS_POLL_MS } from './settings.js';

/** A control message. */
export type ControlMessage =
  | { readonly type: 'settings'; readonly jobId?: string }
  | { readonly type: 'run'; readonly jobId: string; readonly requestId?: string }
  | { readonly type: 'cancel'; readonly jobId: string; readonly requestId?: string }
  | { readonly type: 'cancelled'; readonly jobId: string; readonly requestId: string; readonly instanceId: string }
  | { readonly type: 'left'; readonly instanceId: string }
  | { readonly type: 'joined'; readonly instanceId: string };

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
  const { type, jobId, requestId, instanceId } = value as { type?: unknown; jobId?: unknown; requestId?: unknown; instanceId?: unknown };
  if (type === 'settings') return typeof jobId === 'string' ? { type, jobId } : { type };
  if (type === 'left' || type === 'joined') return typeof instanceId === 'string' && instanceId !== '' ? { type, instanceId } : undefined;
  if (typeof jobId !== 'string' || jobId === '') return undefined;
  if (type === 'run') return typeof requestId === 'string' ? { type, jobId, requestId } : { type, jobId };
  if (type === 'cancel') return typeof requestId === 'string' ? { type, jobId, requestId } : { type, jobId };
  if (type === 'cancelled' && typeof requestId === 'string' && typeof instanceId === 'string') return { type, jobId, requestId, instanceId };
  return undefined;
}

/** Publishes a control message; resolves to the number of nodes that received it. */
export async function publishControl(redis: RedisClient, channel: string, message: ControlMessage): Promise<number> {
  return redis.publish(channel, JSON.stringify(message));
}

/** How often a node says that it ignored control messages it cannot read, at most. */
const UNKNOWN_WARN_MS = 60_000;

/** The channel on which Redis tells a tracking connection that a key it watches changed. */
const INVALIDATE_CHANNEL = '__redis__:invalidate';

/** What the settings source hears from the `sub` connection; see {@link subscribeControl}. */
export interface SettingsWatch {
  /** `<prefix>:settings`. */
  readonly key: string;
  /** The key was written, deleted, expired or flushed. */
  readonly onChange: () => void;
  /**
   * true: from now on Redis tells of every change of the key. false: it may not (the
   * connection is down, on a Cluster, or Redis or the ACL refused tracking); poll instead.
   */
  readonly onWatching: (watching: boolean) => void;
}

/** Options of {@link subscribeControl}. */
export interface SubscribeControlOptions {
  /** `<prefix>:control`. */
  readonly channel: string;
  readonly logger: Logger;
  /** Its monotonic time paces the warning about messages it cannot read. */
  readonly clock: Pick<Timers, 'monotonic'>;
  readonly onMessage: (m: ControlMessage) => void;
  /** Watch the settings hash through Redis's client-side caching (one server or Sentinel). */
  readonly watch?: SettingsWatch;
}

/**
 * Subscribes `sub` (a `sub` connection, used for nothing else) to the control channel, and
 * again after each reconnection. On one server (or behind Sentinel) it first asks Redis to
 * track the settings key (`CLIENT TRACKING ON REDIRECT <own id> BCAST PREFIX <key>`), so an
 * HSET by an operator reaches the node as a message on {@link INVALIDATE_CHANNEL} at once.
 * Tracking must be switched on before the connection enters subscriber mode, which is why
 * this connection subscribes itself on every `'ready'` rather than leaving it to ioredis.
 * Resolves once first subscribed to the control channel (never rejects: a refusal is logged
 * and tried again on the next connection).
 */
export function subscribeControl(sub: RedisClient, opts: SubscribeControlOptions): Promise<void> {
  const { channel, logger, clock, onMessage, watch } = opts;
  // An operator's PUBLISH with a typo would otherwise change nothing, and say nothing.
  let warnedAt = -Infinity;
  sub.on('message', (ch: string, text: string) => {
    if (ch === INVALIDATE_CHANNEL) {
      watch?.onChange();
      return;
    }
    if (ch !== channel) return;
    const m = parseControl(text);
    if (!m) {
      const now = clock.monotonic();
      if (now - warnedAt >= UNKNOWN_WARN_MS) {
        warnedAt = now;
        logger.warn({ channel, length: text.length }, 'ignoring a control message on %s that is not one leasehold sends (said at most once a minute): a message is JSON, such as {"type":"run","jobId":"<id>"}, {"type":"cancel","jobId":"<id>"} or {"type":"settings"}', channel);
      }
      return;
    }
    try {
      onMessage(m);
    } catch (err) {
      logger.error({ err, type: m.type }, 'handling a control message failed');
    }
  });
  if (sub instanceof Cluster) {
    // A Cluster's subscriber connection is ioredis's own and resubscribes by itself; it tracks
    // nothing (invalidations would come from the node holding the key, on another connection).
    watch?.onWatching(false);
    const subscribe = (): Promise<void> => sub.subscribe(channel).then(() => undefined);
    if (sub.status === 'ready') return subscribe();
    return new Promise((resolve, reject) => sub.once('ready', () => subscribe().then(resolve, reject)));
  }
  return subscribeServer(sub, opts);
}

/** {@link subscribeControl} on one server: tracking, then the subscriptions, on every `'ready'`. */
function subscribeServer(sub: Redis, { channel, logger, watch }: SubscribeControlOptions): Promise<void> {
  let connection = 0; // counts connections, so that the setup of a closed one stops there
  let refusedOnce = false;
  /** Sets up the current connection; false when it closed before it was subscribed. */
  const setUp = async (): Promise<boolean> => {
    const mine = connection;
    // Said once; a command cut off by the connection closing is not a refusal.
    const refused = (what: string, err: unknown): void => {
      if (refusedOnce || mine !== connection) return;
      refusedOnce = true;
      logger.info({ error: errorMessage(err) }, '%s (%s); reading the settings hash every %d ms instead', what, errorMessage(err), SETTINGS_POLL_MS);
    };
    let tracking = false;
    if (watch) {
      try {
        const id = await sub.client('ID');
        await sub.client('TRACKING', 'ON', 'REDIRECT', String(id), 'BCAST', 'PREFIX', watch.key);
        tracking = true;
      } catch (err) {
        refused('Redis does not track the settings hash for this node', err);
      }
    }
    if (mine !== connection) return false;
    await sub.subscribe(channel);
    if (!tracking || mine !== connection) return mine === connection;
    try {
      await sub.subscribe(INVALIDATE_CHANNEL);
    } catch (err) {
      refused(`subscribing to ${INVALIDATE_CHANNEL} was refused`, err);
      return mine === connection;
    }
    if (mine === connection) watch?.onWatching(true);
    return mine === connection;
  };
  sub.on('close', () => {
    connection++;
    watch?.onWatching(false);
  });
  let subscribed: (() => void) | undefined;
  const firstSubscribed = new Promise<void>((resolve) => (subscribed = resolve));
  const onReady = (): void => {
    setUp().then(
      (done) => {
        if (done) subscribed?.();
      },
      (err: unknown) => logger.warn({ error: errorMessage(err) }, 'subscribing to the control channel failed (%s); it is tried again on the next connection', errorMessage(err)),
    );
  };
  sub.on('ready', onReady);
  if (sub.status === 'ready') onReady();
  return firstSubscribed;
}
