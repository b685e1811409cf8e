/**
 * Installation jobs need a shared Redis, or an explicit word that the node runs alone (SPEC 4,
 * 7): without Redis every replica would run every installation job. `leasehold start` refuses
 * a module with installation jobs and no Redis unless `--local` or `--private-redis` is given;
 * `createRunner` refuses to add one unless told `local: true`. Instance jobs need neither.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createRunner, isLeaseholdError } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold, spawnLeasehold } from './helpers/node.js';
import { until } from './helpers/wait.js';
import { ping } from '../src/cli/private-redis.js';

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

  it('with --private-redis, stops on Ctrl-C as on any shutdown: its Redis outlives the node, so the run in flight is released and recorded', async () => {
    const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1', '--private-redis'], { ...NO_REDIS, ONLY_JOBS: 'long,steady', LONG_MS: '1500', LOG_LEVEL: 'info' }, { group: true });
    const where = await node.waitFor((l) => typeof l['redis'] === 'string' && typeof l['page'] === 'string', 20_000);
    const redis = new Redis(String(where['redis']), { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await redis.publish('leasehold:control', JSON.stringify({ type: 'run', jobId: 'long' }));
      await until('the run of long to hold its lease', async () => (await redis.exists('leasehold:{long}:lease')) === 1, 10_000);
    } finally {
      redis.disconnect();
    }
    // Ctrl-C in a terminal is SIGINT to the whole foreground process group, the private Redis
    // too. The run in flight ends within the grace; its release and record need that Redis.
    process.kill(-(node.child.pid ?? 0), 'SIGINT');
    assert.equal((await node.exited).code, 0, node.stderr());
    const signalled = node.lines.findIndex((l) => l['signal'] === 'SIGINT');
    assert.ok(signalled >= 0, node.stdout());
    const after = node.lines.slice(signalled);
    assert.deepEqual(after.filter((l) => Number(l['level']) >= 40).map((l) => l['msg']), [], 'nothing failed on the way down');
    assert.ok(after.some((l) => l['msg'] === 'leasehold runner stopped'));
    // ...and the private Redis stops with the node.
    const port = Number(new URL(String(where['redis'])).port);
    await until('the private Redis to stop', async () => !(await ping(port)), 5_000);
  });

  it('with --private-redis, SIGTERM as its Redis comes up: the start stops, the node exits 0, its Redis with it', async () => {
    const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1', '--private-redis'], { ...NO_REDIS, ONLY_JOBS: 'steady', LOG_LEVEL: 'info' });
    const up = await node.waitFor((l) => typeof l['redis'] === 'string' && /started a private redis-server/.test(String(l['msg'])), 20_000);
    node.kill('SIGTERM');
    assert.equal((await node.exited).code, 0, node.stderr());
    assert.ok(node.lines.some((l) => /received SIGTERM/.test(String(l['msg']))), node.stdout());
    assert.deepEqual(node.lines.filter((l) => Number(l['level']) >= 40).map((l) => l['msg']), [], 'nothing failed on the way down');
    const port = Number(new URL(String(up['redis'])).port);
    await until('the private Redis to stop', async () => !(await ping(port)), 5_000);
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
