/**
 * The status API from outside the nodes: the same reads and actions as a node's routes, over
 * the cluster's Redis, for a process that runs no job (`leasehold mcp` over stdio). It is no
 * node: it registers no instance and writes no stats; a run, pause, resume or cancel reaches
 * the nodes through the settings hash and the control channel, as from any node without the job.
 * @module
 */
import { hostname } from 'node:os';
import { systemClock, type Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { errorMessage } from '../errors.js';
import { closeRedis, createRedis, whenReady, type RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import type { RedisTarget } from '../redis/target.js';
import { RunnerCore } from '../runner/runner.js';
import type { ManageApi } from './api.js';
import { createManageApi } from './actions.js';
import { CancelRequests } from './cancel.js';
import { publishControl, subscribeControl } from './control.js';
import { RedisSettings } from './settings.js';

/** Options of {@link remoteManageApi}. */
export interface RemoteManageApiOptions {
  /** Where Redis is (or an existing client to duplicate). */
  readonly redis: { readonly target: RedisTarget } | { readonly client: RedisClient };
  /** The key names of the cluster's prefix. */
  readonly keys: Keys;
  readonly logger: Logger;
  /** Unsuccessful runs in a row from which a job shows as degraded. Default 3. */
  readonly failingStreak?: number;
  readonly clock?: Timers;
}

/** A {@link ManageApi} over Redis alone, with its connections. */
export interface RemoteManageApi {
  readonly api: ManageApi;
  /** Connects (waits at most `waitMs` for Redis) and subscribes to the cancel answers. */
  start(waitMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** Builds the status API of a process that is not a node. */
export function remoteManageApi(opts: RemoteManageApiOptions): RemoteManageApi {
  const { logger } = opts;
  const clock = opts.clock ?? systemClock;
  const { keys } = opts;
  const redis = createRedis({ ...opts.redis, role: 'stats' });
  const sub = createRedis({ ...opts.redis, role: 'sub' });
  redis.on('error', (err: Error) => logger.debug({ error: err.message }, 'status connection error'));
  sub.on('error', (err: Error) => logger.debug({ error: err.message }, 'control connection error'));
  // A core with no job that never starts: the API's "is it on this node" is always no, so every
  // action goes to the nodes through Redis.
  const core = new RunnerCore({ instanceId: `remote-${hostname()}-${process.pid}`, logger, shutdownGraceMs: 0, ...(opts.clock ? { clock: opts.clock } : {}) });
  const settings = new RedisSettings({ redis, key: keys.settings, logger, clock, onChange: () => undefined });
  const cancels = new CancelRequests(clock);
  const api = createManageApi({
    core,
    redis,
    keys,
    settings,
    failingStreak: opts.failingStreak ?? 3,
    cancelEverywhere: async (jobId) => {
      const { requestId, answers } = cancels.open();
      await publishControl(redis, keys.control, { type: 'cancel', jobId, requestId });
      return answers;
    },
    onReadError: (err) => logger.debug({ error: errorMessage(err) }, 'reading the status from Redis failed'),
  });
  return {
    api,
    async start(waitMs) {
      await whenReady(redis, waitMs, clock);
      await subscribeControl(sub, {
        channel: keys.control,
        logger,
        onMessage: (m) => {
          if (m.type === 'cancelled') cancels.answer(m.requestId, m.instanceId);
        },
      });
    },
    async stop() {
      await Promise.all([closeRedis(redis), closeRedis(sub)]);
    },
  };
}
