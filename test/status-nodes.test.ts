/**
 * Real `leasehold start` nodes against one redis-server (SPEC 5, 6): jobs that succeed, fail,
 * run per instance and once per installation; the counters in Redis equal the runs that
 * happened, exactly; both nodes answer the same; admin with and without the token; a pause
 * with HSET; and neither the admin token nor the Redis password in any output.
 * Needs the build (`npm run build`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { keys as keyNames } from '../src/redis/keys.js';
import type { ClusterStatus } from '../src/status/model.js';
import { runLeasehold, spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const TOKEN = 'node-admin-T0ken-secret';
const PASSWORD = 'node-redis-Passw0rd';
const PREFIX = 'nodes-test';
const k = keyNames(PREFIX);

interface Line {
  job: string;
  inst: string;
  ok: boolean;
}

describe('status with real nodes', () => {
  let server: TestRedis;
  let cli: Redis;
  let url: string;
  const runLog = join(mkdtempSync(join(tmpdir(), 'leasehold-status-')), 'runs.jsonl');
  const nodes: Array<{ proc: NodeProc; port: number; id: string }> = [];
  const get = async (port: number, path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${port}${path}`, init);

  before(async () => {
    server = await startRedis({ args: ['--requirepass', PASSWORD] });
    cli = server.client();
    url = server.url;
    for (const id of ['node-a', 'node-b']) {
      const proc = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-status-cluster.mjs', '--port', '0', '--host', '127.0.0.1'], {
        REDIS_URL: url,
        LEASEHOLD_PREFIX: PREFIX,
        LEASEHOLD_INSTANCE_ID: id,
        LEASEHOLD_ADMIN_TOKEN: TOKEN,
        LEASEHOLD_SHUTDOWN_GRACE: '3s',
        RUN_LOG: runLog,
      });
      const line = await proc.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 20_000);
      nodes.push({ proc, port: line['port'] as number, id });
    }
  });
  after(async () => {
    for (const n of nodes) if (n.proc.child.exitCode === null) n.proc.kill('SIGKILL');
    await server.stop();
  });

  it('both nodes answer the same; admin needs the token; a pause with HSET applies', async () => {
    await sleep(2_500);
    const [a, b] = nodes;
    assert.ok(a && b);
    const views = await Promise.all(nodes.map(async (n) => (await (await get(n.port, '/manage/jobs')).json()) as ClusterStatus));
    assert.deepEqual(views[0]?.jobs.map((j) => j.id), ['cluster-failing', 'cluster-once', 'manual-only', 'per-node', 'per-node-failing']);
    assert.deepEqual(views[0]?.instances.map((i) => i.id), ['node-a', 'node-b']);
    assert.deepEqual(views[1]?.instances.map((i) => i.id), ['node-a', 'node-b']);
    const perNode = views[0]?.jobs.find((j) => j.id === 'per-node');
    assert.deepEqual(perNode?.instances.map((r) => [r.instanceId, r.live]), [['node-a', true], ['node-b', true]]);
    assert.equal(views[0]?.jobs.find((j) => j.id === 'cluster-failing')?.lastError, 'cluster failure');

    assert.equal((await get(a.port, '/manage/jobs/manual-only/run', { method: 'POST' })).status, 401);
    assert.equal((await get(a.port, '/manage/jobs/manual-only/run', { method: 'POST', headers: { authorization: 'Bearer nope' } })).status, 403);
    const run = await get(b.port, '/manage/jobs/manual-only/run', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(run.status, 202);

    await cli.hset(k.settings, 'per-node.paused', 'true');
    await sleep(1_000);
    const pausedAt = (await cli.hget(k.stats('per-node'), 'runs')) ?? '';
    await sleep(800);
    assert.equal(await cli.hget(k.stats('per-node'), 'runs'), pausedAt, 'no run anywhere while paused');
    const paused = (await (await get(b.port, '/manage/jobs/per-node')).json()) as { state: string };
    assert.equal(paused.state, 'paused');
    const resume = await get(a.port, '/manage/jobs/per-node/resume', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(resume.status, 200);
    await sleep(600);
  });

  it('after both stop, the counters in Redis equal the runs that happened, exactly', async () => {
    for (const n of nodes) n.proc.kill('SIGTERM');
    for (const n of nodes) assert.equal((await n.proc.exited).code, 0);
    assert.ok(existsSync(runLog));
    const lines = readFileSync(runLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Line);
    for (const job of ['per-node', 'per-node-failing', 'cluster-once', 'cluster-failing', 'manual-only']) {
      const ran = lines.filter((l) => l.job === job);
      const stats = await cli.hgetall(k.stats(job));
      assert.ok(ran.length > 0, `${job} ran`);
      assert.equal(stats['runs'], String(ran.length), `${job}.runs`);
      assert.equal(stats['succeeded'], String(ran.filter((l) => l.ok).length), `${job}.succeeded`);
      assert.equal(stats['failed'], String(ran.filter((l) => !l.ok).length), `${job}.failed`);
      assert.equal(stats['interrupted'], '0', `${job}.interrupted`);
      if (job.startsWith('per-node')) {
        const rows = await cli.hgetall(k.instanceStats(job));
        for (const id of ['node-a', 'node-b']) assert.equal(rows[`${id}.runs`], String(ran.filter((l) => l.inst === id).length), `${job} on ${id}`);
      }
    }
    assert.equal(await cli.zcard(k.instances), 0, 'heartbeats removed on stop');
    const status = await runLeasehold(['status', '--json'], { REDIS_URL: url, LEASEHOLD_PREFIX: PREFIX });
    assert.equal(status.code, 0, status.stderr);
    const view = JSON.parse(status.stdout) as ClusterStatus;
    assert.equal(view.jobs.find((j) => j.id === 'manual-only')?.runs, 1);
    assert.deepEqual(view.instances, []);
    for (const n of nodes) {
      const output = n.proc.stdout() + n.proc.stderr();
      assert.ok(!output.includes(TOKEN), `no admin token in the output of ${n.id}`);
      assert.ok(!output.includes(PASSWORD), `no Redis password in the output of ${n.id}`);
    }
    assert.ok(!status.stdout.includes(PASSWORD) && !status.stderr.includes(PASSWORD));
  });
});
