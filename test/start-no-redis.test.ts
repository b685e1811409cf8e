/**
 * Installation jobs need a shared Redis, or an explicit word that the node runs alone (SPEC 4,
 * 7): without Redis every replica would run every installation job. `leasehold start` refuses
 * a module with installation jobs and no Redis unless `--local` or `--private-redis` is given;
 * `createRunner` refuses to add one unless told `local: true`. Instance jobs need neither.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRunner, isLeaseholdError } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold, spawnLeasehold } from './helpers/node.js';

const NO_REDIS = { REDIS_URL: '', REDIS_CLUSTER_NODES: '', REDIS_SENTINELS: '' };

describe('leasehold start without Redis', () => {
  it('refuses a module with installation jobs, saying why and what to do', async () => {
    const r = await runLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1'], { ...NO_REDIS, ONLY_JOBS: 'flaky,steady' });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /installation job "flaky" .*needs Redis, and this runner has none: configure redisUrl/);
    assert.match(r.stderr, /--local/);
    assert.match(r.stderr, /--private-redis/);
  });

  it('starts with --local, and says that installation jobs are not shared', async () => {
    const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1', '--local'], { ...NO_REDIS, ONLY_JOBS: 'flaky,steady' });
    await node.waitFor((l) => String(l['msg']).startsWith('HTTP listening'), 20_000);
    assert.ok(node.lines.some((l) => l['level'] === 40 && /no Redis \(local: this node runs alone\)/.test(String(l['msg']))));
    node.kill('SIGTERM');
    assert.equal((await node.exited).code, 0);
  });

  it('starts a module of instance jobs without any flag', async () => {
    const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1'], { ...NO_REDIS, ONLY_JOBS: 'steady' });
    await node.waitFor((l) => String(l['msg']).startsWith('HTTP listening'), 20_000);
    node.kill('SIGTERM');
    assert.equal((await node.exited).code, 0);
  });
});

describe('createRunner without Redis', () => {
  const job = { id: 'nightly', scope: 'installation', cron: '0 0 3 * * *', run: () => undefined } as const;

  it('refuses an installation job unless told local: true', async () => {
    const { logger } = memoryLogger();
    const runner = createRunner({ logger });
    assert.throws(() => runner.add(job), (err: unknown) => isLeaseholdError(err, 'redisRequired') && /installation job "nightly"/.test(err.message) && /local: true/.test(err.message));
    runner.add({ id: 'per-node', fixedRate: '1h', run: () => undefined });
    const alone = createRunner({ logger, local: true });
    assert.equal(alone.add(job).id, 'nightly');
    await alone.start();
    await alone.stop();
  });

  it('refuses local: true beside a Redis option', () => {
    assert.throws(() => createRunner({ local: true, redisUrl: 'redis://127.0.0.1:6390' }), (err: unknown) => isLeaseholdError(err, 'invalidConfig') && /local: true/.test(err.message));
  });
});
