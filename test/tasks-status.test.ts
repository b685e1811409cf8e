/**
 * The executors in the status: `GET /manage/executors` cluster-wide from any node (a row per
 * node for loop and worker executors, the queue's counts for a queue executor), the
 * `leasehold status` table, and the Prometheus metrics of tasks.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, defineTask, type ExecutorStats } from '../src/index.js';
import { runStatus } from '../src/cli/status.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const io = defineTask({ id: 'fetch', executor: 'io', run: (ms: number) => sleep(ms).then(() => ms) });
const broken = defineTask({ id: 'broken', executor: 'io', run: () => Promise.reject(new Error('no route to host')) });
const mail = defineTask({ id: 'send', executor: 'mail', run: (to: string) => `sent to ${to}` });

test('GET /manage/executors answers for the cluster from any node; leasehold status prints the executors; the metrics count tasks', async () => {
  const mk = (instanceId: string) =>
    createRunner({ redisUrl: redis.url, prefix: 'st', instanceId, logger: memoryLogger('warn').logger, shutdownGrace: '200ms', executors: { io: { concurrency: 2 }, mail: { kind: 'queue', lease: '2s' }, idle: { kind: 'worker', concurrency: 1 } } });
  const a = mk('node-a');
  const b = mk('node-b');
  for (const r of [a, b]) {
    r.addTask(io);
    r.addTask(mail);
  }
  await a.start();
  await b.start();
  await Promise.all([1, 2, 3].map(async (n) => (await b.submit(io, n * 5)).result()));
  await (await a.submit(io, 5)).result();
  await (await a.submit(broken, null)).result().catch(() => undefined);
  const sent = await Promise.all(['x@example.com', 'y@example.com'].map(async (to) => (await a.submit(mail, to)).result()));
  assert.deepEqual(sent, ['sent to x@example.com', 'sent to y@example.com']);
  // Let node b write its figures after its tasks (it writes at its first task, then every 5 s).
  await sleep(5_300);

  const app = Fastify();
  await app.register(a.routes);
  const res = await app.inject({ method: 'GET', url: '/manage/executors' });
  assert.equal(res.statusCode, 200);
  const { executors } = res.json<{ executors: ExecutorStats[] }>();
  const row = (name: string, instanceId?: string) => executors.find((e) => e.name === name && e.instanceId === instanceId);
  assert.deepEqual(
    { ...row('io', 'node-a') },
    { name: 'io', kind: 'loop', instanceId: 'node-a', concurrency: 2, active: 0, queued: 0, succeeded: 1, failed: 1, timedOut: 0, cancelled: 0, interrupted: 0 },
  );
  assert.equal(row('io', 'node-b')?.succeeded, 3, 'node b\'s row, read from Redis on node a');
  const queue = row('mail');
  assert.equal(queue?.kind, 'queue');
  assert.equal(queue?.succeeded, 2, 'the queue\'s completed tasks');
  assert.equal(executors.filter((e) => e.name === 'mail').length, 1, 'one row for a queue: its figures are the cluster\'s');
  assert.equal(row('idle', 'node-a')?.kind, 'worker', 'a configured executor shows before its first task, at zero');
  await app.close();

  const status = await runStatus(['--redis-url', redis.url, '--prefix', 'st']);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /EXECUTOR\s+KIND\s+INSTANCE\s+CONCURRENCY\s+ACTIVE\s+QUEUED\s+OK\s+FAILED/);
  assert.match(status.stdout, /io\s+loop\s+node-a\s+2\s+0\s+0\s+1\s+1/);
  assert.match(status.stdout, /io\s+loop\s+node-b\s+2\s+0\s+0\s+3\s+0/);
  assert.match(status.stdout, /mail\s+queue\s+\(cluster\)\s+10\s+0\s+0\s+2\s+0/);

  const text = await a.metrics.metrics();
  assert.match(text, /leasehold_tasks_total\{executor="io",task="fetch",outcome="succeeded"\} 1/);
  assert.match(text, /leasehold_tasks_total\{executor="io",task="broken",outcome="failed"\} 1/);
  assert.match(text, /leasehold_task_duration_seconds_count\{executor="io",task="fetch",outcome="succeeded"\} 1/);
  assert.match(text, /leasehold_task_queue_depth\{executor="io"\} 0/);
  assert.match(text, /leasehold_tasks_active\{executor="mail"\} 0/);
  await a.stop();
  await b.stop();
  const after = await redis.client().hgetall('st:executors');
  assert.deepEqual(after, {}, 'a stopped node removes its row');
});

test('a queue no live node consumes still shows in the executors, with the tasks waiting on it', async () => {
  // A web node submits to the mail queue; the nodes that send mail are all down.
  const web = createRunner({ redisUrl: redis.url, prefix: 'unconsumed', instanceId: 'web', logger: memoryLogger('warn').logger, shutdownGrace: '200ms', executors: { mail: { kind: 'queue' } } });
  await web.start();
  for (const to of ['a@example.com', 'b@example.com', 'c@example.com']) await web.submit(mail, to);
  await web.stop();
  const status = await runStatus(['--redis-url', redis.url, '--prefix', 'unconsumed']);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /mail\s+queue\s+\(cluster\)\s+0\s+0\s+3\s+0\s+0/, `the backlog of a queue without a consumer:\n${status.stdout}`);
});

test('without Redis GET /manage/executors answers with this node\'s executors', async () => {
  const r = createRunner({ logger: memoryLogger('warn').logger });
  await r.start();
  await (await r.submit(defineTask({ id: 'local', run: () => 1 }), null)).result();
  const app = Fastify();
  await app.register(r.routes);
  const res = await app.inject({ method: 'GET', url: '/manage/executors' });
  assert.equal(res.statusCode, 200);
  const rows = res.json<{ executors: ExecutorStats[] }>().executors;
  assert.equal(rows.length, 1);
  assert.equal(rows[0]?.name, 'default');
  assert.equal(rows[0]?.succeeded, 1);
  await app.close();
  await r.stop();
});

test('a queue executor costs nothing until it is used: no connection of its own before its first task', async () => {
  const r = createRunner({ redisUrl: redis.url, prefix: 'lazy', instanceId: 'lazy-node', logger: memoryLogger('warn').logger, executors: { mail: { kind: 'queue' } } });
  await r.start();
  const admin = redis.client();
  const queueConnections = async (): Promise<number> => ((await admin.client('LIST')) as string).split('\n').filter((l) => l.includes('name=leasehold-queue')).length;
  await sleep(200);
  assert.equal(await queueConnections(), 0, 'no queue connection before the first task');
  assert.equal(await admin.hlen('lazy:executors'), 0, 'nothing on the executors board either');
  await r.submit(mail, 'z@example.com');
  assert.ok((await queueConnections()) > 0, 'the first submit opens it');
  await r.stop();
  await sleep(200);
  assert.equal(await queueConnections(), 0, 'and stop() closes it');
});
