/**
 * A node that joins a running cluster, or leaves it, is ranked by the others at once: it says so
 * on the control channel, and they read the live nodes then rather than at their next heartbeat
 * (every 5 s), during which they would rank its ticks differently from it (a tick claimed twice,
 * or by nobody). Two real `leasehold start` processes on a real redis-server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const startNode = (id: string): NodeProc => spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-basic.mjs', '--port', '0'], { REDIS_URL: redis.url, LEASEHOLD_PREFIX: 'join', LEASEHOLD_INSTANCE_ID: id, LEASEHOLD_SHUTDOWN_GRACE: '300ms' });
const sees = (nodes: string) => (l: Record<string, unknown>): boolean => l['msg'] === `the live nodes that run these jobs: ${nodes}`;

test('a running node ranks a node that joins as soon as its first heartbeat is written, and one that leaves as soon as it stops', async () => {
  const a = startNode('node-a');
  await a.waitFor((l) => l['msg'] === 'leasehold runner started', 20_000);
  const b = startNode('node-b');
  // node-b's first heartbeat sees node-a: from then on node-a must see node-b too.
  await b.waitFor(sees('node-a, node-b'), 20_000);
  const joinedAt = Date.now();
  await a.waitFor(sees('node-a, node-b'), 5_000);
  const tookJoin = Date.now() - joinedAt;
  assert.ok(tookJoin < 1_500, `node-a ranked node-b ${tookJoin} ms after node-b's first heartbeat (its own heartbeat is every 5 s)`);

  await b.waitFor((l) => /^status: /.test(String(l['msg'])), 20_000);
  const leftAt = Date.now();
  b.kill('SIGTERM');
  await a.waitFor(sees('node-a'), 5_000);
  const tookLeave = Date.now() - leftAt;
  assert.ok(tookLeave < 2_500, `node-a stopped ranking node-b ${tookLeave} ms after it was told to stop`);
  assert.equal((await b.exited).code, 0);
  a.kill('SIGTERM');
  assert.equal((await a.exited).code, 0);
});

