/**
 * A Redis outage reads as one: a run whose claim fails says once, plainly, which Redis is
 * unreachable and which tick of which job was not claimed (no raw tick number, no client
 * library's wording), and /health names Redis.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { createRunner, type RunEndedEvent } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

test('with Redis unreachable, a failed claim says which Redis, why and which tick, once, and /health names Redis and why', async () => {
  const port = await freePort();
  const runner = createRunner({ redisUrl: `redis://127.0.0.1:${port}`, logger: memoryLogger().logger, instanceId: 'cut-off', shutdownGrace: 0 });
  const ended: RunEndedEvent[] = [];
  runner.on('runEnded', (e) => ended.push(e));
  runner.add({ id: 'rollup', scope: 'installation', fixedRate: '1s', run: () => undefined });
  await runner.start();
  const app = Fastify();
  await app.register(runner.routes);
  try {
    await until('a failed claim', () => ended.length > 0, 10_000);
    const e = ended[0] as RunEndedEvent;
    assert.equal(e.outcome, 'failed');
    const iso = new Date(e.scheduledAt).toISOString();
    assert.equal(e.error, `Redis at 127.0.0.1:${port} is unreachable: connect ECONNREFUSED 127.0.0.1:${port}; tick ${iso} of "rollup" not claimed`);
    assert.doesNotMatch(e.error ?? '', /writeable|enableOfflineQueue|\d{13}/);
    const health = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 503);
    // The target and the cause, in leasehold's words: not what the client says of a command it could not send.
    const reasons = (JSON.parse(health.body) as { reasons: Array<{ check: string; message: string }> }).reasons;
    assert.deepEqual(reasons.filter((r) => r.check === 'redis').map((r) => r.message), [`Redis at 127.0.0.1:${port} is unreachable: connect ECONNREFUSED 127.0.0.1:${port}`]);
    assert.doesNotMatch(health.body, /writeable|enableOfflineQueue/);
  } finally {
    await app.close();
    await runner.stop();
  }
});

test('a Redis that refuses writes (NOREPLICAS) for longer than the stats writer tries a batch drops no count and blames no key: every run is counted once it takes writes again', async () => {
  const server = await startRedis();
  const cli = server.client();
  const log = memoryLogger();
  const runner = createRunner({ redisUrl: server.url, prefix: 'norep', logger: log.logger, instanceId: 'writer', shutdownGrace: '200ms' });
  const ended = new Map<string, number>();
  runner.on('runEnded', (e) => {
    if (!e.willRetry) ended.set(e.jobId, (ended.get(e.jobId) ?? 0) + 1);
  });
  runner.add({ id: 'beat', scope: 'instance', fixedRate: '100ms', run: () => undefined });
  runner.add({ id: 'digest', scope: 'installation', fixedRate: '200ms', run: () => sleep(50) });
  try {
    await runner.start();
    await until('counted runs', async () => Number(await cli.hget('norep:{beat}:stats', 'runs')) > 0 && Number(await cli.hget('norep:{digest}:stats', 'runs')) > 0, 10_000);
    // No replica is connected: every write is refused, as by a master cut off from its replica.
    await cli.config('SET', 'min-replicas-to-write', '1');
    const refused = await cli.hset('norep:probe', 'x', '1').then(() => 'accepted', (err: unknown) => String(err));
    assert.match(refused, /NOREPLICAS/);
    await sleep(8_000); // longer than five tries with their backoff
    await cli.config('SET', 'min-replicas-to-write', '0');
    const metrics = await runner.metrics.metrics();
    for (const job of ['beat', 'digest']) {
      const dropped = new RegExp(`^leasehold_stats_batches_dropped_total\\{job="${job}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? '0';
      assert.equal(dropped, '0', `no batch of ${job} was dropped`);
    }
  } finally {
    await runner.stop();
  }
  try {
    for (const job of ['beat', 'digest']) {
      const runs = Number(await cli.hget(`norep:{${job}}:stats`, 'runs'));
      assert.equal(runs, ended.get(job), `${job}: every run that ended is counted: ${runs} of ${ended.get(job)}`);
    }
    assert.ok(!log.lines.some((l) => /corruptState|wrong type/.test(JSON.stringify(l))), 'no key is blamed');
  } finally {
    await server.stop();
  }
});

test('a Redis restarted without its data is said once, at error, naming what was lost; a restart that kept its data says nothing', async (t) => {
  const kept = await startRedis({ appendonly: true });
  const emptied = await startRedis();
  t.after(() => Promise.all([kept.stop(), emptied.stop()]));
  const nodes = [kept, emptied].map((server, i) => {
    const log = memoryLogger('info');
    const runner = createRunner({ redisUrl: server.url, prefix: 'lossy', instanceId: `lossy-${i}`, logger: log.logger, shutdownGrace: '200ms' });
    runner.add({ id: 'digest', scope: 'installation', fixedRate: '500ms', run: () => undefined });
    return { server, log, runner };
  });
  const said = (log: ReturnType<typeof memoryLogger>) => log.lines.filter((l) => Number(l['level']) >= 50 && /lost its data/.test(String(l['msg'])));
  try {
    for (const n of nodes) await n.runner.start();
    for (const n of nodes) await until('a token', async () => Number(await n.server.client().hget('lossy:{digest}:state', 'fence')) >= 2, 10_000);
    for (const n of nodes) await n.server.restart();
    // The next heartbeat (every 5 s) finds it.
    await until('the loss said', () => said(nodes[1]!.log).length > 0, 12_000);
    const [line] = said(nodes[1]!.log);
    assert.match(String(line?.['msg']), /lossy:epoch/);
    assert.match(String(line?.['msg']), /fencing tokens/);
    assert.match(String(line?.['msg']), /lossy:settings/);
    await sleep(5_500); // one more heartbeat: said once
    assert.equal(said(nodes[1]!.log).length, 1);
    assert.equal(said(nodes[0]!.log).length, 0, 'the Redis with its append-only file kept its data');
  } finally {
    for (const n of nodes) await n.runner.stop();
  }
});
