import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isLeaseholdError } from '../src/errors.js';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { measureOffset } from '../src/redis/time.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

describe('clock offset to redis', () => {
  let server: TestRedis;
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    await server.stop();
  });

  it('is about zero for this machine\'s own clock', async () => {
    const { offsetMs, rttMs } = await measureOffset(server.client());
    assert.ok(Math.abs(offsetMs) < 50, `offset ${offsetMs}`);
    assert.ok(rttMs >= 0 && rttMs < 100, `rtt ${rttMs}`);
  });

  it('finds a clock that runs behind or ahead', async () => {
    const behind = await measureOffset(server.client(), { now: () => Date.now() - 7_000 });
    assert.ok(Math.abs(behind.offsetMs - 7_000) < 50, `offset ${behind.offsetMs}`);
    const ahead = await measureOffset(server.client(), { now: () => Date.now() + 90_000 });
    assert.ok(Math.abs(ahead.offsetMs + 90_000) < 50, `offset ${ahead.offsetMs}`);
  });

  it('keeps the sample with the smallest round trip', async () => {
    // A fake clock that makes every sample but the third look slow.
    let calls = 0;
    const clock = {
      now: () => {
        calls += 1;
        const sample = Math.ceil(calls / 2);
        const isReceive = calls % 2 === 0;
        return Date.now() + (isReceive && sample !== 3 ? 400 : 0);
      },
    };
    const { offsetMs, rttMs } = await measureOffset(server.client(), clock);
    assert.ok(rttMs < 100, `rtt ${rttMs}`);
    assert.ok(Math.abs(offsetMs) < 50, `offset ${offsetMs}`);
  });

  it('reports a failing Redis as redisError', async () => {
    const redis = createRedis({ url: server.url, role: 'lease', commandTimeoutMs: 200 });
    try {
      await whenReady(redis, 5000);
      server.pause();
      await assert.rejects(measureOffset(redis), (err) => isLeaseholdError(err, 'redisError'));
    } finally {
      server.resume();
      redis.disconnect();
    }
  });
});
