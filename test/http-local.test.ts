/**
 * A runner without Redis serves its own view: `/health` and `/metrics` answer, the status
 * routes say (503) that the status is kept in Redis, and `runner.metrics` is there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { createRunner } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';

test('without Redis: /metrics is served with this node\'s runs, the status routes answer 503 with the reason', async () => {
  const runner = createRunner({ logger: memoryLogger().logger, instanceId: 'alone', shutdownGrace: 0 });
  runner.add({ id: 'local-job', fixedRate: '50ms', run: () => undefined });
  await runner.start();
  await new Promise((r) => setTimeout(r, 300));
  const app = Fastify();
  await app.register(runner.routes);
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(metrics.statusCode, 200);
  assert.match(metrics.body, /leasehold_job_runs_total\{job="local-job",outcome="succeeded"\} [1-9]/);
  assert.match(await runner.metrics.metrics(), /leasehold_job_runs_total/);
  const health = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(health.statusCode, 200);
  for (const url of ['/manage/jobs', '/manage/jobs/local-job']) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 503);
    assert.match(res.json<{ message: string }>().message, /status is kept in Redis, and this node has none: give the runner redisUrl \(REDIS_URL for leasehold start, or --private-redis\)/);
  }
  await app.close();
  await runner.stop();
});
