/**
 * A run now that finds the job running (SPEC 3.4, 5): with three real nodes, an installation
 * job's run now during its run is answered 409 with the run that holds it, from every node,
 * and neither that nor a `PUBLISH ... run` counts a skip anywhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { keys as keyNames } from '../src/redis/keys.js';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

const TOKEN = 'runnow-admin-T0ken-secret';
const PREFIX = 'runnow-running';
const k = keyNames(PREFIX);

describe('a run now during a run, three nodes', () => {
  let server: TestRedis;
  let cli: Redis;
  const nodes: Array<{ proc: NodeProc; port: number; id: string }> = [];
  const run = (port: number) => fetch(`http://127.0.0.1:${port}/manage/jobs/long/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });

  before(async () => {
    server = await startRedis();
    cli = server.client();
    for (const id of ['node-a', 'node-b', 'node-c']) {
      const proc = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1'], {
        REDIS_URL: server.url,
        LEASEHOLD_PREFIX: PREFIX,
        LEASEHOLD_INSTANCE_ID: id,
        LEASEHOLD_ADMIN_TOKEN: TOKEN,
        LEASEHOLD_SHUTDOWN_GRACE: '1s',
        ONLY_JOBS: 'long',
        LONG_MS: '8000',
      });
      const line = await proc.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 20_000);
      nodes.push({ proc, port: line['port'] as number, id });
    }
  });
  after(async () => {
    for (const n of nodes) if (n.proc.child.exitCode === null) n.proc.kill('SIGKILL');
    await server.stop();
  });

  it('is answered 409 naming the run, and counts nothing as a skip', async () => {
    const [a, b, c] = nodes;
    assert.ok(a && b && c);
    const first = await run(a.port);
    assert.equal(first.status, 202, await first.text());
    await until('the run now to hold the lease', async () => (await cli.get(k.lease('long'))) !== null);
    const holder = ((await cli.get(k.lease('long'))) ?? '').split(' ')[0];
    const before = await cli.hgetall(k.stats('long'));

    for (const n of nodes) {
      const again = await run(n.port);
      const body = (await again.json()) as { statusCode: number; message: string; jobId: string; running: { instanceId: string; since: string; fencingToken: number } };
      assert.equal(again.status, 409, `node ${n.id}: ${JSON.stringify(body)}`);
      assert.equal(body.jobId, 'long');
      assert.equal(body.running.instanceId, holder, `node ${n.id} names the node that runs it`);
      assert.match(body.running.since, /^\d{4}-\d\d-\d\dT/);
      assert.equal(typeof body.running.fencingToken, 'number');
      assert.match(body.message, new RegExp(`job "long" is running on ${holder}`));
    }
    // An operator's PUBLISH reaches every node; the two that do not run it find it running.
    assert.equal(await cli.publish(k.control, JSON.stringify({ type: 'run', jobId: 'long' })), 3);
    await sleep(1_500);
    const after = await cli.hgetall(k.stats('long'));
    for (const field of ['skipped', 'skippedClaimed', 'runs', 'failed']) assert.equal(after[field], before[field], `${field} unchanged`);
    const lines = nodes.flatMap((n) => n.proc.lines);
    assert.ok(!lines.some((l) => l['msg'] === 'start skipped' && l['jobId'] === 'long'), 'no node logged a skip');
  });
});
