import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { isLeaseholdError } from '../src/errors.js';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { roleOptions } from '../src/redis/roles.js';
import { redactUrl, targetOptions } from '../src/redis/target.js';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';

describe('redis urls', () => {
  it('reads host, port, user, password, database and TLS', () => {
    assert.deepEqual(targetOptions({ url: 'redis://127.0.0.1:6380/3' }), { host: '127.0.0.1', port: 6380, db: 3 });
    assert.deepEqual(targetOptions({ url: 'redis://cache' }), { host: 'cache', port: 6379, db: 0 });
    assert.deepEqual(targetOptions({ url: 'rediss://app:s%40cret@cache.example:7000/' }), {
      host: 'cache.example', port: 7000, db: 0, username: 'app', password: 's@cret', tls: {},
    });
    assert.deepEqual(targetOptions({ url: 'redis://:pw@[::1]:7001' }), { host: '::1', port: 7001, db: 0, password: 'pw' });
  });

  it('rejects a bad url without ever showing its password', () => {
    const secret = 'hunter2-very-secret';
    const bad = [
      `redis://user:${secret}@host:99999`,
      `http://user:${secret}@host:6379`,
      `redis://user:${secret}@host/notadb`,
      `redis://user:${secret}@host/0?tls=yes`,
      `redis://user:${secret}@/0`,
      `redis://user:${secret}%zz@host`,
      `redis//user:${secret}@host`,
      `not a url at all :${secret}@`,
    ];
    for (const url of bad) {
      assert.throws(() => targetOptions({ url }), (err) => {
        assert.ok(isLeaseholdError(err, 'invalidRedisTarget'), url);
        assert.ok(!err.message.includes(secret), err.message);
        assert.ok(!JSON.stringify(err).includes(secret));
        assert.equal(err.cause, undefined);
        return true;
      });
      assert.throws(() => createRedis({ url, role: 'lease' }), (err) => isLeaseholdError(err, 'invalidRedisTarget') && !err.message.includes(secret));
    }
  });

  it('redacts passwords for logs', () => {
    assert.equal(redactUrl('redis://u:p%40ss@h:1/2'), 'redis://u:***@h:1/2');
    assert.equal(redactUrl('rediss://:pw@h'), 'rediss://:***@h');
    assert.equal(redactUrl('redis://h:6379/0'), 'redis://h:6379/0');
    assert.equal(redactUrl('redis://u:p@ss@h'), 'redis://u:***@h');
    assert.equal(redactUrl('redis://u:pa:ss@h'), 'redis://u:***@h');
    assert.equal(redactUrl('redis//u:secret@h'), 'redis//u:***@h');
  });

  it('never makes the lease connection wait forever as a BullMQ worker one would', () => {
    const lease = roleOptions('lease');
    assert.equal(lease.enableOfflineQueue, false);
    assert.notEqual(lease.maxRetriesPerRequest, null);
    assert.equal(lease.commandTimeout, 2000);
    assert.equal(roleOptions('lease', 700).commandTimeout, 700);
    assert.throws(() => roleOptions('lease', -1), (err) => isLeaseholdError(err, 'invalidConfig'));
  });
});

describe('redis connections', () => {
  let server: TestRedis;
  const opened: Redis[] = [];
  const track = (r: Redis): Redis => {
    opened.push(r);
    return r;
  };
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    for (const r of opened) r.disconnect();
    await server.stop();
  });

  it('connects from a url and names the connection by role', async () => {
    const redis = track(createRedis({ url: server.url, role: 'lease' }));
    await whenReady(redis, 5000);
    assert.equal(await redis.ping(), 'PONG');
    assert.equal(await redis.client('GETNAME'), 'leasehold-lease');
  });

  it('duplicates a given client with the role options', async () => {
    const base = server.client();
    const redis = track(createRedis({ client: base, role: 'stats' }));
    await whenReady(redis, 5000);
    assert.notEqual(redis, base);
    assert.equal(redis.options.enableOfflineQueue, false);
    assert.equal(await redis.client('GETNAME'), 'leasehold-stats');
  });

  it('fails fast when nothing listens', async () => {
    const port = await freePort();
    const redis = track(createRedis({ url: `redis://127.0.0.1:${port}`, role: 'lease' }));
    redis.on('error', () => undefined);
    const started = performance.now();
    await assert.rejects(redis.ping());
    assert.ok(performance.now() - started < 500);
    await assert.rejects(whenReady(redis, 200), (err) => isLeaseholdError(err, 'redisError'));
  });

  it('times out a command on a stalled server instead of queueing it', async () => {
    const redis = track(createRedis({ url: server.url, role: 'lease', commandTimeoutMs: 300 }));
    await whenReady(redis, 5000);
    server.pause();
    try {
      const started = performance.now();
      await assert.rejects(redis.ping(), /timed out/);
      const took = performance.now() - started;
      assert.ok(took >= 250 && took < 1500, `took ${took}ms`);
    } finally {
      server.resume();
    }
  });
});
