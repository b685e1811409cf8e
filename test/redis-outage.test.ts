/**
 * A Redis outage reads as one: a run whose claim fails says once, plainly, which Redis is
 * unreachable and which tick of which job was not claimed (no raw tick number, no client
 * library's wording), and /health names Redis.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { createRunner, type RunEndedEvent } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { freePort } from './helpers/redis.js';
import { until } from './helpers/wait.js';

test('with Redis unreachable, a failed claim says which Redis and which tick, once, and /health names Redis', async () => {
  const port = await freePort();
  const runner = createRunner({ redisUrl: `redis://127.0.0.1:${port}`, logger: memoryLogger().logger, instanceId: 'cut-off', shutdownGrace: 0 });
  const ended: RunEndedEvent[] = [];
  runner.on('runEnded', (e) => ended.push(e));
  runner.add({ id: 'rollup', scope: 'installation', fixedRate: '1s', run: () => undefined });
  await runner.start();
  const app = Fastify();
  await app.register(runner.routes);
  try {
    await until('a failed claim', () => ended.length > 0, 10_000);
    const e = ended[0] as RunEndedEvent;
    assert.equal(e.outcome, 'failed');
    const iso = new Date(e.scheduledAt).toISOString();
    assert.equal(e.error, `Redis at 127.0.0.1:${port} is unreachable; tick ${iso} of "rollup" not claimed`);
    assert.doesNotMatch(e.error ?? '', /writeable|enableOfflineQueue|\d{13}/);
    const health = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 503);
    assert.match(health.body, new RegExp(`Redis at 127\\.0\\.0\\.1:${port} is unreachable`));
  } finally {
    await app.close();
    await runner.stop();
  }
});
