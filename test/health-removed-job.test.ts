/**
 * A deploy that removes a job (SPEC 5): a job that no live node registers is `orphaned`, never
 * degraded, so `/health` stays green; a node that stops cleanly takes its registrations with
 * it, so right after it stopped the job it alone had is orphaned and `leasehold forget` works.
 * Real nodes: the old one with a failing job, the new one without it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { keys as keyNames } from '../src/redis/keys.js';
import type { ClusterStatus } from '../src/status/model.js';
import { runLeasehold, spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

const PREFIX = 'removed-job';
const k = keyNames(PREFIX);

describe('a deploy that drops a failing job', () => {
  let server: TestRedis;
  let cli: Redis;
  const procs: NodeProc[] = [];
  const start = async (id: string, only: string): Promise<{ proc: NodeProc; port: number }> => {
    const proc = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1'], {
      REDIS_URL: server.url,
      LEASEHOLD_PREFIX: PREFIX,
      LEASEHOLD_INSTANCE_ID: id,
      LEASEHOLD_SHUTDOWN_GRACE: '1s',
      ONLY_JOBS: only,
    });
    procs.push(proc);
    const line = await proc.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 20_000);
    return { proc, port: line['port'] as number };
  };
  const get = (port: number, path: string) => fetch(`http://127.0.0.1:${port}${path}`);

  before(async () => {
    server = await startRedis();
    cli = server.client();
  });
  after(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.kill('SIGKILL');
    await server.stop();
  });

  it('keeps /health green once the node that had the job is gone, and forget works at once', async () => {
    const old = await start('old', 'doomed,steady');
    await until('the failing job to turn /health red', async () => (await get(old.port, '/health')).status === 503, 15_000);

    // The deploy: the old node stops cleanly, the new one runs without the job.
    old.proc.kill('SIGTERM');
    assert.equal((await old.proc.exited).code, 0);
    const fresh = await start('new', 'steady');
    const health = await get(fresh.port, '/health');
    assert.equal(health.status, 200, await health.text());
    const status = (await (await get(fresh.port, '/manage/jobs')).json()) as ClusterStatus;
    const doomed = status.jobs.find((j) => j.id === 'doomed');
    assert.equal(doomed?.state, 'orphaned');
    assert.equal(doomed?.active, false);
    assert.deepEqual(doomed?.degradedReasons, []);
    assert.equal(status.jobs.find((j) => j.id === 'steady')?.state, 'ok');

    const refused = await runLeasehold(['forget', 'steady'], { REDIS_URL: server.url, LEASEHOLD_PREFIX: PREFIX });
    assert.equal(refused.code, 1, 'a job a live node registers is not forgotten');
    assert.match(refused.stderr, /registered by a live node/);
    const forgot = await runLeasehold(['forget', 'doomed'], { REDIS_URL: server.url, LEASEHOLD_PREFIX: PREFIX });
    assert.equal(forgot.code, 0, forgot.stderr);
    assert.equal(await cli.exists(k.stats('doomed')), 0);
    assert.equal(await cli.sismember(k.jobs, 'doomed'), 0);
  });
});
