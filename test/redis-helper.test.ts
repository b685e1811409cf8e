import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';

describe('test redis helper', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis({ appendonly: true });
  });
  after(async () => {
    await redis.stop();
  });

  it('serves on a free loopback port, never 6379', async () => {
    assert.notEqual(redis.port, 6379);
    assert.equal(redis.url, `redis://127.0.0.1:${redis.port}`);
    assert.equal(await redis.client().ping(), 'PONG');
  });

  it('freePort returns a usable port', async () => {
    const port = await freePort();
    assert.ok(port > 0 && port < 65536);
  });

  it('pause stops answers until resume', async () => {
    const client = redis.client();
    await client.ping();
    redis.pause();
    const answer = client.ping();
    const winner = await Promise.race([answer, sleep(300, 'silent')]);
    assert.equal(winner, 'silent');
    redis.resume();
    assert.equal(await answer, 'PONG');
  });

  it('restart keeps append-only data on the same port', async () => {
    const client = redis.client();
    await client.set('helper-test:kept', 'yes');
    await redis.kill();
    await redis.restart();
    const again = redis.client();
    assert.equal(await again.get('helper-test:kept'), 'yes');
  });

  it('stop is safe while paused and when repeated', async () => {
    const other = await startRedis();
    other.pause();
    await other.stop();
    await other.stop();
  });

  it('starts a server with --requirepass: its url and clients carry the password, others are refused', async () => {
    const secured = await startRedis({ args: ['--requirepass', 'p@ss word'] });
    try {
      assert.equal(secured.url, `redis://:p%40ss%20word@127.0.0.1:${secured.port}`);
      assert.equal(await secured.client().ping(), 'PONG');
      const stranger = new Redis(secured.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
      try {
        await assert.rejects(stranger.ping(), /NOAUTH/);
      } finally {
        stranger.disconnect();
      }
    } finally {
      await secured.stop();
    }
  });
});
