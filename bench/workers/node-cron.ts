/**
 * node-cron 4 in distributed mode: every process schedules every job with
 * `{ name, distributed: true, distributedLease, noOverlap: true }`, and a run coordinator
 * written the way node-cron's documentation describes its Redis one: on each fire,
 * `shouldRun(key, ttlMs)` sends one `SET <prefix><key> <token> NX PX <ttlMs>` (the key is
 * node-cron's `<name>:<fire time ISO>`), and `onComplete(key)` releases the key with a Lua
 * compare-and-delete of the winner's token. The winner runs the shared job body; the tick is
 * the fire time node-cron hands the task.
 * @module
 */
import { randomUUID } from 'node:crypto';
import cron, { type RunCoordinator } from 'node-cron';
import { Redis } from 'ioredis';
import { jobId } from '../protocol.js';
import { body, countCommands, fail, openRecorder, readConfig, serve } from './kit.js';

/**
 * Deletes KEYS[1] (string: a fire's lock) only while it still holds ARGV[1] (string: the token
 * this process set). Returns 1 when deleted, 0 when the key is gone or another token holds it.
 */
const RELEASE = `
local lock = KEYS[1]
local token = ARGV[1]
if redis.call('GET', lock) == token then
  return redis.call('DEL', lock)
end
return 0
`;

interface Releasing {
  releaseFireLock(key: string, token: string): Promise<number>;
}

/** The documented Redis run coordinator, on the process's ioredis client. */
class RedisRunCoordinator implements RunCoordinator {
  private readonly tokens = new Map<string, string>();

  constructor(
    private readonly redis: Redis & Releasing,
    private readonly keyPrefix: string,
  ) {}

  async shouldRun(key: string, ttlMs: number): Promise<boolean> {
    const token = randomUUID();
    const won = (await this.redis.set(this.keyPrefix + key, token, 'PX', ttlMs, 'NX')) === 'OK';
    if (won) this.tokens.set(key, token);
    return won;
  }

  async onComplete(key: string): Promise<void> {
    const token = this.tokens.get(key);
    if (token === undefined) return;
    this.tokens.delete(key);
    await this.redis.releaseFireLock(this.keyPrefix + key, token);
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const counts = countCommands();
  const redis = new Redis(config.redisUrl);
  redis.defineCommand('releaseFireLock', { numberOfKeys: 1, lua: RELEASE });
  const extra = { notElected: 0, coordinatorErrors: 0, overlaps: 0, missed: 0, failed: 0 };
  const recorder = openRecorder(config.recordFile);
  cron.setRunCoordinator(new RedisRunCoordinator(redis as Redis & Releasing, `${config.prefix}:lock:`));
  await redis.ping();
  for (let i = 0; i < config.jobs; i++) {
    const task = cron.schedule(config.cron, (ctx) => body(recorder.record, i, ctx.date.getTime()), {
      name: jobId(i),
      distributed: true,
      distributedLease: config.leaseMs,
      noOverlap: true,
    });
    task.on('execution:skipped', (ctx) => {
      if (ctx.reason === 'coordinator-error') extra.coordinatorErrors++;
      else extra.notElected++;
    });
    task.on('execution:overlap', () => void extra.overlaps++);
    task.on('execution:missed', () => void extra.missed++);
    task.on('execution:failed', () => void extra.failed++);
  }
  serve({
    counts,
    extra: () => ({ ...extra }),
    stop: async () => {
      await cron.shutdown(2_000);
      await redis.quit();
      recorder.close();
    },
  });
}

main().catch(fail);
