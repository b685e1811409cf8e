/**
 * `leasehold status [--json]` (SPEC 5): the same view as `GET /manage/jobs`, straight from
 * Redis; a readable table; clear errors, and never the Redis password.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { runStatus, renderStatus } from '../src/cli/status.js';
import { createNode, type StatusNode as StatusLayer } from '../src/create/index.js';
import type { ClusterStatus } from '../src/status/model.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold } from './helpers/node.js';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';

const PREFIX = 'status-cli-test';

describe('leasehold status', () => {
  let server: TestRedis;
  let env: Record<string, string>;
  let fromHttp: ClusterStatus;
  let layer: StatusLayer;

  before(async () => {
    server = await startRedis();
    env = { REDIS_URL: server.url, LEASEHOLD_PREFIX: PREFIX };
    const { logger } = memoryLogger();
    layer = createNode({ instanceId: 'cli-node', logger, shutdownGraceMs: 100, redis: { url: server.url }, prefix: PREFIX });
    const core = layer.core;
    core.add({ id: 'works', fixedRate: '100ms', run: () => undefined });
    core.add({ id: 'breaks', scope: 'installation', fixedRate: '100ms', run: () => Promise.reject(new Error('no disk')) });
    await layer.start();
    core.start();
    await new Promise((r) => setTimeout(r, 700));
    await core.stop();
    await layer.flush();
    // Let the states settle: without runs, "no successful run for 3 intervals" (plus its
    // slack) sets in after about 2.3 s; after that nothing depends on the moment.
    await new Promise((r) => setTimeout(r, 2_600));
    const app = Fastify();
    await app.register(layer.routes);
    // The runner is stopped, so nothing changes any more; the layer (and the node's
    // heartbeat) stays until the end, so the instance rows are live in both views.
    fromHttp = (await app.inject({ method: 'GET', url: '/manage/jobs' })).json<ClusterStatus>();
    await app.close();
  });
  after(async () => {
    await layer.stop();
    await server.stop();
  });

  // What depends on the moment of reading: Redis time, durations in the reasons, heartbeats.
  const strip = (s: ClusterStatus) =>
    JSON.parse(JSON.stringify({ ...s, generatedAt: '', instances: s.instances.map((i) => ({ ...i, lastSeenAt: '' })) }).replace(/ for \d+(\.\d+)?[smh],/g, ' for N,')) as unknown;

  it('--json prints exactly what GET /manage/jobs returns', async () => {
    const res = await runStatus(['--json'], env);
    assert.equal(res.code, 0, res.stderr);
    assert.ok(res.stdout.endsWith('}\n'));
    const cli = JSON.parse(res.stdout) as ClusterStatus;
    assert.deepEqual(strip(cli), strip(fromHttp));
    assert.equal(cli.jobs.find((j) => j.id === 'breaks')?.lastError, 'no disk');
    const flags = await runStatus(['--json', '--redis-url', server.url, '--prefix', PREFIX], {});
    assert.deepEqual(strip(JSON.parse(flags.stdout) as ClusterStatus), strip(fromHttp));
  });

  it('prints a readable table', async () => {
    const res = await runStatus([], env);
    assert.equal(res.code, 0);
    const [header, ...rows] = res.stdout.split('\n');
    assert.match(header ?? '', /^ID\s+SCOPE\s+STATE\s+RUNS\s+OK\s+FAILED\s+LAST OUTCOME\s+LAST START\s+NEXT DUE$/);
    assert.match(rows[0] ?? '', /^breaks\s+installation\s+degraded\s+\d+\s+0\s+\d+\s+failed\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
    assert.match(rows[1] ?? '', /^works\s+instance\s+degraded\s+(\d+)\s+\1\s+0\s+succeeded/);
    assert.match(res.stdout, /breaks: failing streak/);
    assert.match(res.stdout, /breaks: last error: no disk/);
    assert.match(renderStatus({ generatedAt: '', jobs: [], instances: [], problems: [] }), /no jobs registered\n\nno live instances/);
  });

  it('a prefix with nothing under it says so on stderr, naming the prefix and where to look; the one in use says nothing', async () => {
    const wrong = await runStatus([], { REDIS_URL: server.url, LEASEHOLD_PREFIX: 'not-this-one' });
    assert.equal(wrong.code, 0);
    assert.match(wrong.stdout, /no jobs registered/);
    assert.match(wrong.stderr, /nothing under the prefix "not-this-one" at redis:\/\/127\.0\.0\.1:\d+.*--prefix, LEASEHOLD_PREFIX/);
    assert.equal((await runStatus([], env)).stderr, '');
  });

  it('bad usage exits 2; an unreachable Redis exits 1 without showing the password', async () => {
    assert.equal((await runStatus([], {})).code, 2);
    assert.match((await runStatus([], {})).stderr, /REDIS_URL/);
    assert.equal((await runStatus(['--colour'], env)).code, 2);
    assert.equal((await runStatus(['extra'], env)).code, 2);
    assert.equal((await runStatus(['--prefix', 'bad{prefix}'], env)).code, 2);
    const port = await freePort();
    const secret = 's3cr3t-Pw';
    const res = await runStatus([], { REDIS_URL: `redis://admin:${secret}@127.0.0.1:${port}` });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /redis:\/\/admin:\*\*\*@127\.0\.0\.1:\d+ is unreachable/);
    assert.ok(!res.stderr.includes(secret));
    const bad = await runStatus([], { REDIS_URL: `http://u:${secret}@x` });
    assert.equal(bad.code, 2);
    assert.ok(!bad.stderr.includes(secret));
  });

  it('the built command: leasehold status --json', async () => {
    const res = await runLeasehold(['status', '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(strip(JSON.parse(res.stdout) as ClusterStatus), strip(fromHttp));
  });
});
