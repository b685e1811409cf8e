/**
 * The registry against a real redis-server (SPEC 5): the job set holds every job of the
 * node, a job added later joins it, and the heartbeat does not resend thousands of ids
 * every few seconds, yet restores them after Redis lost them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys as keyNames } from '../src/redis/keys.js';
import { Registry } from '../src/status/registry.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

describe('registry', () => {
  let server: TestRedis;
  let admin: Redis;

  before(async () => {
    server = await startRedis();
    admin = server.client();
    admin.on('error', () => undefined); // Redis is killed on purpose below
  });
  after(async () => {
    await server.stop();
  });

  const saddCalls = async (): Promise<number> => {
    const info = await admin.info('commandstats');
    return Number(/cmdstat_sadd:calls=(\d+)/.exec(info)?.[1] ?? 0);
  };

  it('sends the job ids when they change or were lost, not with every heartbeat', async () => {
    const k = keyNames('registry-test');
    const ids = Array.from({ length: 2_000 }, (_, i) => `job-${i}`);
    const redis = createRedis({ url: server.url, role: 'stats' });
    redis.on('error', () => undefined);
    await whenReady(redis, 5_000);
    const registry = new Registry({
      redis, keys: k, instanceId: 'node-r', version: 'test', logger: memoryLogger().logger,
      now: () => Date.now(), jobIds: () => [...ids], instanceJobIds: () => [],
    });
    await registry.start();
    assert.equal(await admin.scard(k.jobs), 2_000);
    assert.equal(await admin.hget(k.instance('node-r'), 'jobs'), '2000');

    const before = await saddCalls();
    for (let i = 0; i < 5; i++) await registry.beat();
    assert.equal(await saddCalls(), before, 'heartbeats with unchanged jobs add no members');
    assert.ok((await admin.exists(k.instance('node-r'))) === 1, 'the heartbeat itself is written');

    ids.push('job-late');
    registry.jobsChanged();
    await registry.beat();
    assert.equal(await admin.sismember(k.jobs, 'job-late'), 1, 'a job added later joins the set');
    assert.equal(await admin.hget(k.instance('node-r'), 'jobs'), '2001');

    // Redis restarted empty: the failed heartbeat makes the next one send every id again.
    await server.kill();
    await registry.beat();
    await server.restart();
    await whenReady(redis, 10_000);
    await registry.beat();
    assert.equal(await admin.scard(k.jobs), 2_001);

    await registry.stop(2_000);
    await redis.quit();
  });
});
