/**
 * The number of recent runs each job keeps is configurable (`recentRuns`,
 * `LEASEHOLD_RECENT_RUNS`); a bad value is refused with an error naming it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createNode } from '../src/create/index.js';
import { readConfig } from '../src/cli/config.js';
import { keys as keyNames } from '../src/redis/keys.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

let server: TestRedis;
before(async () => {
  server = await startRedis();
});
after(async () => {
  await server.stop();
});

test('a node keeps as many recent runs per job as configured', async () => {
  const { logger } = memoryLogger();
  const layer = createNode({ instanceId: 'n', logger, shutdownGraceMs: 100, redis: { url: server.url }, prefix: 'recent', recentRuns: 3 });
  const core = layer.core;
  core.add({ id: 'often', fixedRate: '50ms', run: () => undefined });
  await layer.start();
  core.start();
  await new Promise((r) => setTimeout(r, 600));
  await core.stop();
  await layer.flush();
  const admin = server.client();
  assert.ok(Number(await admin.hget(keyNames('recent').stats('often'), 'runs')) >= 5);
  assert.equal(await admin.llen(keyNames('recent').runs('often')), 3);
  await layer.stop();
});

test('a bad recentRuns is refused, naming it', () => {
  const { logger } = memoryLogger();
  assert.throws(() => createNode({ instanceId: 'n', logger, shutdownGraceMs: 100, redis: { url: server.url }, prefix: 'recent', recentRuns: 0 }), /recentRuns must be a whole number from 1 to 1000, got 0/);
  assert.throws(() => readConfig({}, { LEASEHOLD_RECENT_RUNS: 'lots' }), /LEASEHOLD_RECENT_RUNS\/--recent-runs: "lots" is not a whole number from 1 to 1000/);
  assert.equal(readConfig({}, { LEASEHOLD_RECENT_RUNS: '200' }).recentRuns, 200);
});
