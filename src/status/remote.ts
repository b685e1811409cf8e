/**
 * The status API from outside the nodes: the same reads and actions as a node's routes, over
 * the cluster's Redis, for a process that runs no job (`leasehold mcp` over stdio). It is no
 * node: it registers no instance and writes no stats; a run, pause, resume or cancel reaches
 * the nodes through the settings hash and the control channel, as from any node without the job.
 * @module
 */
import { hostname } from 'node:os';
import type { Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { errorMessage } from '../errors.js';
import { whenReady, type RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import type { ManageApi } from './api.js';
import { createManageApi, type ManageScheduler } from './actions.js';
import { CancelRequests } from './cancel.js';
import { publishControl, subscribeControl } from './control.js';
import { DEFAULT_FAILING_STREAK } from './model.js';
import { RedisSettings } from './settings.js';

/** Options of {@link remoteManageApi}. */
export interface RemoteManageApiOptions {
  /** A `stats` connection, handed in; never closed here. */
  readonly redis: RedisClient;
  /** A `sub` connection for the answers to a cancel, handed in; never closed here. */
  readonly sub: RedisClient;
  /** The key names of the cluster's prefix. */
  readonly keys: Keys;
  readonly logger: Logger;
  readonly clock: Timers;
  /** Unsuccessful runs in a row from which a job shows as degraded. Default 3. */
  readonly failingStreak?: number;
}

/** A {@link ManageApi} over Redis alone. */
export interface RemoteManageApi {
  readonly api: ManageApi;
  /** Waits at most `waitMs` for Redis, then subscribes to the cancel answers. */
  start(waitMs: number): Promise<void>;
}

/** No job is on this process: the API's "is it on this node" is always no. */
function notANode(clock: Timers): ManageScheduler {
  return { instanceId: `remote-${hostname()}-${process.pid}`, clock, job: () => undefined, jobs: () => [], runNow: () => false };
}

/** Builds the status API of a process that is not a node. */
export function remoteManageApi(opts: RemoteManageApiOptions): RemoteManageApi {
  const { logger, clock, keys, redis, sub } = opts;
  // Nothing here applies settings: the nodes do, told by the control channel.
  const settings = new RedisSettings({ redis, key: keys.settings, logger, clock, onChange: () => undefined });
  const cancels = new CancelRequests(clock);
  const api = createManageApi({
    core: notANode(clock),
    redis,
    keys,
    settings,
    failingStreak: opts.failingStreak ?? DEFAULT_FAILING_STREAK,
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
        clock,
        onMessage: (m) => {
          if (m.type === 'cancelled') cancels.answer(m.requestId, m.instanceId);
        },
      });
    },
  };
}
