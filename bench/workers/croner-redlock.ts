/**
 * The hand-written peer: every process runs a croner timer per job and, on each fire,
 * tries `redlock.acquire([lock], ttl, { retryCount: 0 })`; the winner runs the shared job
 * body and releases the lock. The tick is the fire time floored to the cron's period
 * (croner fires at or after its target, never before).
 * @module
 */
import { Cron } from 'croner';
import { Redis } from 'ioredis';
import Redlock, { ExecutionError, ResourceLockedError } from 'redlock';
import { jobId } from '../protocol.js';
import { body, countCommands, fail, openRecorder, readConfig, serve } from './kit.js';

async function main(): Promise<void> {
  const config = readConfig();
  const counts = countCommands();
  const redis = new Redis(config.redisUrl);
  const redlock = new Redlock([redis], { retryCount: 0 });
  const extra = { locksRefused: 0, redisErrors: 0 };
  // redlock reports every lost vote as an error event; a lock held elsewhere is expected.
  redlock.on('error', (err: unknown) => {
    if (!(err instanceof ResourceLockedError)) extra.redisErrors++;
  });
  const recorder = openRecorder(config.recordFile);
  const fire = async (i: number): Promise<void> => {
    const tick = Math.floor(Date.now() / config.periodMs) * config.periodMs;
    let lock;
    try {
      lock = await redlock.acquire([`${config.prefix}:lock:${jobId(i)}`], config.leaseMs, { retryCount: 0 });
    } catch (err) {
      if (err instanceof ExecutionError) {
        extra.locksRefused++;
        return;
      }
      throw err;
    }
    try {
      await body(recorder.record, i, tick);
    } finally {
      await lock.release().catch(() => extra.redisErrors++);
    }
  };
  const crons: Cron[] = [];
  for (let i = 0; i < config.jobs; i++) {
    crons.push(new Cron(config.cron, { name: jobId(i), catch: () => extra.redisErrors++ }, () => fire(i)));
  }
  await redis.ping();
  serve({
    counts,
    extra: () => ({ ...extra }),
    stop: async () => {
      for (const c of crons) c.stop();
      await redis.quit();
      recorder.close();
    },
  });
}

main().catch(fail);
