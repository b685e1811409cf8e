/**
 * The settings hash as the runner's settings source (SPEC 6): a change applies within a
 * second, values are served from memory while Redis is stalled or away, and nothing in the
 * hash can crash the reader.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys as keyNames } from '../src/redis/keys.js';
import { parseSettings, RedisSettings } from '../src/status/settings.js';
import { parseControl } from '../src/status/control.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

describe('settings hash', () => {
  let server: TestRedis;
  let admin: Redis;
  let n = 0;
  const setup = async () => {
    const k = keyNames(`settings-test-${++n}`);
    const redis = createRedis({ url: server.url, role: 'stats', commandTimeoutMs: 300 });
    redis.on('error', () => undefined);
    await whenReady(redis, 5_000);
    const changed: Array<{ id: string; at: number }> = [];
    const settings = new RedisSettings({ redis, key: k.settings, logger: memoryLogger().logger, onChange: (id) => changed.push({ id, at: Date.now() }) });
    return { k, redis, settings, changed };
  };

  before(async () => {
    server = await startRedis();
    admin = server.client();
  });
  after(async () => {
    await server.stop();
  });

  it('splits fields at the last dot, keeps only known fields', () => {
    const parsed = parseSettings({
      'report.daily.paused': 'true',
      'report.daily.cron': '0 0 6 * * *',
      'a.zone': 'Europe/Berlin',
      'a.colour': 'blue',
      'nodot': 'x',
      '.paused': 'true',
    });
    assert.deepEqual(parsed.get('report.daily'), { paused: 'true', cron: '0 0 6 * * *' });
    assert.deepEqual(parsed.get('a'), { zone: 'Europe/Berlin' });
    assert.equal(parsed.size, 2);
  });

  it('a settings hash of the wrong type is said once at warn, naming the key and corruptSettings; the last settings stay in force until it is repaired', async () => {
    const k = keyNames(`settings-test-${++n}`);
    const redis = createRedis({ url: server.url, role: 'stats', commandTimeoutMs: 300 });
    redis.on('error', () => undefined);
    await whenReady(redis, 5_000);
    const log = memoryLogger();
    const settings = new RedisSettings({ redis, key: k.settings, logger: log.logger, onChange: () => undefined });
    await admin.hset(k.settings, 'job-a.paused', 'true');
    assert.equal(await settings.load(), true);
    await admin.del(k.settings);
    await admin.set(k.settings, 'garbage');
    for (let i = 0; i < 3; i++) assert.equal(await settings.load(), false);
    assert.equal(settings.problem?.code, 'corruptSettings');
    assert.ok(settings.problem?.message.includes(k.settings));
    assert.deepEqual(settings.get('job-a'), { paused: 'true' }, 'the last known settings stay in force');
    const warned = log.lines.filter((l) => l['level'] === 40);
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.equal(warned[0]?.['code'], 'corruptSettings');
    assert.match(String(warned[0]?.['msg']), /holds a string/);
    await admin.del(k.settings);
    assert.equal(await settings.load(), true);
    assert.equal(settings.problem, undefined);
    assert.deepEqual(settings.get('job-a'), {});
    redis.disconnect();
  });

  it('a pause written with HSET reaches the runner within a second', async () => {
    const { k, redis, settings, changed } = await setup();
    await settings.load();
    settings.start();
    assert.deepEqual(settings.get('job-a'), {});
    const t0 = Date.now();
    await admin.hset(k.settings, 'job-a.paused', 'true');
    while (changed.length === 0 && Date.now() - t0 < 2_000) await sleep(20);
    assert.equal(changed[0]?.id, 'job-a');
    assert.ok((changed[0]?.at ?? Infinity) - t0 < 1_000, `applied after ${(changed[0]?.at ?? 0) - t0} ms`);
    assert.deepEqual(settings.get('job-a'), { paused: 'true' });
    assert.deepEqual(settings.get('job-b'), {});
    // Only changed jobs are refreshed; a deleted field is a change too.
    changed.length = 0;
    await admin.hset(k.settings, 'job-b.cron', '*/5 * * * * *');
    await admin.hdel(k.settings, 'job-a.paused');
    await sleep(800);
    assert.deepEqual(changed.map((c) => c.id).sort(), ['job-a', 'job-b']);
    assert.deepEqual(settings.get('job-a'), {});
    await settings.stop(1_000);
    await redis.quit();
  });

  it('a job whose overrides did not change keeps the same object across reads; a change gives a new one', async () => {
    const { k, redis, settings, changed } = await setup();
    await admin.hset(k.settings, { 'a.paused': 'true', 'b.cron': '0 0 * * * *' });
    assert.equal(await settings.load(), true);
    const [a, b, none] = [settings.get('a'), settings.get('b'), settings.get('nobody')];
    await admin.hset(k.settings, 'b.cron', '0 30 * * * *');
    changed.length = 0;
    assert.equal(await settings.load(), true);
    assert.equal(settings.get('a'), a, 'unchanged: the same object, so the runner need not resolve it again');
    assert.notEqual(settings.get('b'), b);
    assert.deepEqual(settings.get('b'), { cron: '0 30 * * * *' });
    assert.equal(settings.get('nobody'), none);
    assert.deepEqual(changed.map((c) => c.id), ['b']);
    await redis.quit();
  });

  it('bad values are handed over as they are, and never break the reader', async () => {
    const { k, redis, settings } = await setup();
    await admin.hset(k.settings, {
      'j.paused': 'maybe',
      'j.cron': '0 0 25 * * *',
      'j.timeout': '-5s',
      'j.lease': '\u0000\u00ff',
      'weird{}.paused': 'true',
      '': 'x',
    });
    assert.equal(await settings.load(), true);
    assert.deepEqual(settings.get('j'), { paused: 'maybe', cron: '0 0 25 * * *', timeout: '-5s', lease: '\u0000\u00ff' });
    // The settings key holding another type is an error of the read, not a crash.
    const other = keyNames(`settings-test-${++n}`);
    await admin.set(other.settings, 'not a hash');
    const s2 = new RedisSettings({ redis, key: other.settings, logger: memoryLogger().logger, onChange: () => undefined });
    assert.equal(await s2.load(), false);
    assert.deepEqual(s2.get('j'), {});
    await redis.quit();
  });

  it('keeps the last known settings while Redis is stalled, and get() never waits', async () => {
    const { k, redis, settings } = await setup();
    await admin.hset(k.settings, 'slow.paused', 'true');
    await settings.load();
    settings.start();
    server.pause();
    try {
      await sleep(700);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 1_000; i++) assert.deepEqual(settings.get('slow'), { paused: 'true' });
      assert.ok(Number(process.hrtime.bigint() - t0) / 1e6 < 200);
      assert.equal(await settings.load(), false);
      assert.deepEqual(settings.get('slow'), { paused: 'true' });
    } finally {
      server.resume();
    }
    await sleep(600);
    await settings.stop(1_000);
    await redis.quit();
  });

  it('control messages: only leasehold\'s are accepted', () => {
    assert.deepEqual(parseControl('{"type":"settings"}'), { type: 'settings' });
    assert.deepEqual(parseControl('{"type":"run","jobId":"a"}'), { type: 'run', jobId: 'a' });
    assert.deepEqual(parseControl('{"type":"left","instanceId":"node-b"}'), { type: 'left', instanceId: 'node-b' });
    assert.deepEqual(parseControl('{"type":"joined","instanceId":"node-c"}'), { type: 'joined', instanceId: 'node-c' });
    for (const bad of ['', 'null', '[]', '{"type":"run"}', '{"type":"run","jobId":""}', '{"type":"left"}', '{"type":"left","instanceId":""}', '{"type":"joined","instanceId":7}', '{"type":"drop"}', 'x'.repeat(5000), '{']) {
      assert.equal(parseControl(bad), undefined, bad.slice(0, 20));
    }
  });
});
