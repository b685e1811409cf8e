/**
 * A key of the wrong type in Redis (an operator's `SET` on the wrong key, another program
 * sharing the prefix) costs only the job it belongs to: each of a job's keys corrupted in turn,
 * the other jobs keep running and counting, the damaged job's counters never move without a
 * run, and what is wrong is said once, naming the key and the repair. A settings hash of the
 * wrong type is said as such (not as Redis being down), and the status shows it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import type { Redis } from 'ioredis';
import { createRunner, isLeaseholdError, type Runner, type RunEndedEvent } from '../src/index.js';
import { keys as keyNames, type Keys } from '../src/redis/keys.js';
import { forgetJob } from '../src/status/forget.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

const TOKEN = 'corrupt-keys-admin-token';
const RUN_FIELDS = ['runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'cancelled', 'streak'] as const;

/** A job's key by the name the key table gives it. */
const KEYS: Record<string, (k: Keys, job: string) => string> = {
  lease: (k, job) => k.lease(job),
  state: (k, job) => k.state(job),
  stats: (k, job) => k.stats(job),
  instances: (k, job) => k.instanceStats(job),
  runs: (k, job) => k.runs(job),
  writers: (k, job) => k.writers(job),
};

interface Node {
  runner: Runner;
  ended: RunEndedEvent[];
  log: ReturnType<typeof memoryLogger>;
}

async function startNode(server: TestRedis, prefix: string): Promise<Node> {
  const log = memoryLogger('info');
  const runner = createRunner({ redisUrl: server.url, prefix, logger: log.logger, instanceId: `node-${prefix}`, shutdownGrace: '200ms', adminToken: TOKEN });
  const ended: RunEndedEvent[] = [];
  runner.on('runEnded', (e) => {
    if (!e.willRetry) ended.push(e);
  });
  // a and ia are damaged, b and ib are not; installation and instance jobs of each.
  for (const id of ['a', 'b']) runner.add({ id, scope: 'installation', fixedRate: '150ms', run: () => undefined });
  for (const id of ['ia', 'ib']) runner.add({ id, scope: 'instance', fixedRate: '150ms', run: () => undefined });
  await runner.start();
  return { runner, ended, log };
}

/** A job's run counters in Redis (empty when its stats hash cannot be read). */
async function counters(redis: Redis, k: Keys, job: string): Promise<Record<string, string>> {
  if ((await redis.type(k.stats(job))) !== 'hash') return {};
  const values = await redis.hmget(k.stats(job), ...RUN_FIELDS);
  return Object.fromEntries(RUN_FIELDS.map((f, i) => [f, values[i] ?? '']));
}

/** The length of a job's recent runs (-1 when the list cannot be read). */
async function recent(redis: Redis, k: Keys, job: string): Promise<number> {
  return (await redis.type(k.runs(job))) === 'list' || (await redis.exists(k.runs(job))) === 0 ? redis.llen(k.runs(job)) : -1;
}

function dropped(metrics: string, job: string): number {
  const m = new RegExp(`^leasehold_stats_batches_dropped_total\\{job="${job}"\\} (\\d+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : 0;
}

// Each test has a prefix of its own on the shared Redis, and waits in real time: they run together.
describe('a key of the wrong type', { concurrency: true }, () => {
  let server: TestRedis;
  let cli: Redis;
  before(async () => {
    server = await startRedis();
    cli = server.client();
  });
  after(async () => {
    await server.stop();
  });

  for (const which of Object.keys(KEYS)) {
    it(`at a job's ${which} key fails only that job, says so once naming the key, and no counter moves without a run`, async () => {
      const prefix = `corrupt-${which}`;
      const k = keyNames(prefix);
      const node = await startNode(server, prefix);
      try {
        // Every job has run and been counted.
        await until('every job counted', async () => {
          for (const job of ['a', 'b', 'ia', 'ib']) if (Number((await counters(cli, k, job))['runs'] ?? 0) < 1) return false;
          return true;
        });
        const damaged = ['a', 'ia'].map((job) => (KEYS[which] as (k: Keys, job: string) => string)(k, job));
        for (const key of damaged) {
          // A string where a hash or list is kept; a hash where the lease (a string) is kept.
          // In one transaction: between a DEL and a write the node may claim the lease again.
          if (which === 'lease') await cli.multi().del(key).hset(key, 'x', '1').exec();
          else await cli.set(key, 'garbage');
        }
        const since = node.ended.length;
        const corruptedAt = Date.now();
        const bBefore = Number((await counters(cli, k, 'b'))['runs']);
        await sleep(1_500);

        // The damaged jobs stop; then their counters must stay still while others count on.
        await cli.hset(k.settings, 'a.paused', 'true', 'ia.paused', 'true');
        await until('paused', () => node.runner.jobs().filter((j) => j.id === 'a' || j.id === 'ia').every((j) => j.state === 'paused'));
        // Longer than the writer's tries of a batch that cannot apply (and its 2 s backoff).
        await sleep(2_500);
        const still = await Promise.all(['a', 'ia'].map(async (job) => [await counters(cli, k, job), await recent(cli, k, job)]));
        const bMid = Number((await counters(cli, k, 'b'))['runs']);
        await sleep(2_500);
        const later = await Promise.all(['a', 'ia'].map(async (job) => [await counters(cli, k, job), await recent(cli, k, job)]));
        assert.deepEqual(later, still, 'no counter of a paused damaged job moves');
        const bAfter = Number((await counters(cli, k, 'b'))['runs']);
        assert.ok(bMid > bBefore && bAfter > bMid, `the other job keeps running and counting: ${bBefore} -> ${bMid} -> ${bAfter}`);
        assert.ok(Number((await counters(cli, k, 'ib'))['runs']) > 0);

        // Never counted twice: the counters hold at most the runs that ended.
        for (const job of ['a', 'ia', 'b', 'ib']) {
          const c = await counters(cli, k, job);
          if (c['runs'] === undefined) continue;
          const ran = node.ended.filter((e) => e.jobId === job).length;
          assert.ok(Number(c['runs']) <= ran, `${job}: ${c['runs']} runs counted, ${ran} ended`);
        }
        const after = node.ended.slice(since);
        if (which === 'lease' || which === 'state') {
          // The damaged installation job's claims fail, each on its own, with corruptState naming the key.
          // Ticks claimed after the damage (a run claimed before it may end after it).
          const fails = after.filter((e) => e.jobId === 'a' && e.scheduledAt > corruptedAt + 200);
          assert.ok(fails.length > 0 && fails.every((e) => e.outcome === 'failed' && isLeaseholdError(e.cause, 'corruptState')), JSON.stringify(fails.map((e) => e.error)));
          assert.ok(fails[0]?.error?.includes(damaged[0] ?? ''), fails[0]?.error);
          assert.ok(after.some((e) => e.jobId === 'b' && e.outcome === 'succeeded'));
          assert.ok(!after.some((e) => e.jobId === 'b' && e.outcome !== 'succeeded'), 'no other job fails');
        } else {
          // The runs go on; their stats cannot be written, and each batch is dropped after bounded tries.
          assert.ok(!after.some((e) => e.outcome !== 'succeeded'), JSON.stringify(after.filter((e) => e.outcome !== 'succeeded').map((e) => e.error)));
          const metrics = await node.runner.metrics.metrics();
          assert.ok(dropped(metrics, 'ia') > 0, `ia's dropped batches are counted\n${metrics.split('\n').filter((l) => l.includes('dropped')).join('\n')}`);
          if (which !== 'instances') assert.ok(dropped(metrics, 'a') > 0, 'a\'s dropped batches are counted');
          assert.equal(dropped(metrics, 'b'), 0);
        }
        // Said once per damaged key, at warn, naming the key.
        for (const key of damaged) {
          const lines = node.log.lines.filter((l) => Number(l['level']) >= 40 && JSON.stringify(l).includes(key));
          if (which === 'lease' || which === 'state') {
            if (key.includes('{ia}')) continue; // an instance job claims nothing
          } else if (which === 'instances' && key.includes('{a}')) continue; // an installation job has no rows
          assert.equal(lines.length, 1, `${key} said once: ${JSON.stringify(lines)}`);
          assert.match(String(lines[0]?.['msg']), /DEL/);
        }
        assert.ok(!node.log.lines.some((l) => /unreachable/.test(String(l['msg']))), 'nothing says Redis is down');
      } finally {
        await node.runner.stop();
      }
    });
  }

  it('at the state key of a job whose run is in flight is said once: the run\'s release that finds it leaves the saying to the claim', async () => {
    const prefix = 'corrupt-inflight';
    const k = keyNames(prefix);
    const log = memoryLogger('info');
    let finish = (): void => undefined;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    let first = true;
    const runner = createRunner({ redisUrl: server.url, prefix, logger: log.logger, instanceId: 'inflight', shutdownGrace: '200ms' });
    const ended: RunEndedEvent[] = [];
    runner.on('runEnded', (e) => ended.push(e));
    runner.add({ id: 'a', scope: 'installation', fixedRate: '300ms', run: () => (first ? ((first = false), gate) : undefined) });
    try {
      await runner.start();
      await until('the run in flight', async () => (await cli.get(k.lease('a'))) !== null);
      await cli.del(k.state('a'));
      await cli.set(k.state('a'), 'garbage');
      finish();
      await until('claims failing on the damaged key', () => ended.filter((e) => e.outcome === 'failed' && isLeaseholdError(e.cause, 'corruptState')).length >= 2);
    } finally {
      await runner.stop();
    }
    const lines = log.lines.filter((l) => Number(l['level']) >= 40 && JSON.stringify(l).includes(k.state('a')));
    assert.equal(lines.length, 1, `said once: ${JSON.stringify(lines.map((l) => l['msg']))}`);
  });

  it('is repaired by leasehold forget once no node runs the job, whichever of its keys it is', async () => {
    const k = keyNames('corrupt-forget');
    await cli.sadd(k.jobs, 'gone');
    for (const key of Object.values(KEYS).map((f) => f(k, 'gone'))) await cli.set(key, 'garbage');
    const r = await forgetJob(cli, k, 'gone');
    assert.equal(r.kind, 'forgotten');
    for (const key of Object.values(KEYS).map((f) => f(k, 'gone'))) assert.equal(await cli.exists(key), 0, key);
    assert.equal(await cli.sismember(k.jobs, 'gone'), 0);
  });

  it('at the settings hash is said as such: pause answers with the key and the code, logged once at warn, and the status says settings cannot be read', async () => {
    const prefix = 'corrupt-settings';
    const k = keyNames(prefix);
    const node = await startNode(server, prefix);
    const app = Fastify();
    await app.register(node.runner.routes);
    const auth = { authorization: `Bearer ${TOKEN}` };
    try {
      await until('b counted', async () => Number((await counters(cli, k, 'b'))['runs'] ?? 0) > 0);
      await cli.set(k.settings, 'garbage');
      const pause = await app.inject({ method: 'POST', url: '/manage/jobs/a/pause', headers: auth });
      assert.notEqual(pause.statusCode, 503);
      assert.doesNotMatch(pause.body, /unreachable/);
      const body = pause.json<{ message: string; code?: string }>();
      assert.ok(body.message.includes(k.settings), body.message);
      assert.equal(body.code, 'corruptSettings');
      assert.equal((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200);

      await until('status says so', async () => {
        const status = (await app.inject({ method: 'GET', url: '/manage/jobs', headers: auth })).json<{ problems?: Array<{ code: string; key: string }> }>();
        return status.problems?.some((p) => p.code === 'corruptSettings' && p.key === k.settings) === true;
      });
      const health = await app.inject({ method: 'GET', url: '/health' });
      assert.equal(health.statusCode, 503);
      assert.match(health.body, /settings/);
      assert.ok(health.body.includes(k.settings), health.body);

      // The node keeps reading (the hash is read every heartbeat or on change): said once.
      await sleep(1_500);
      const said = node.log.lines.filter((l) => Number(l['level']) === 40 && JSON.stringify(l).includes(k.settings));
      assert.equal(said.length, 1, JSON.stringify(said));
      assert.equal(said[0]?.['code'], 'corruptSettings');
      const bBefore = Number((await counters(cli, k, 'b'))['runs']);
      await until('b keeps running', async () => Number((await counters(cli, k, 'b'))['runs']) > bBefore);

      // Repaired, it works again, and the status no longer says so.
      await cli.del(k.settings);
      assert.equal((await app.inject({ method: 'POST', url: '/manage/jobs/a/pause', headers: auth })).statusCode, 200);
      await until('paused', () => node.runner.jobs().find((j) => j.id === 'a')?.state === 'paused');
      await until('status clear', async () => {
        const status = (await app.inject({ method: 'GET', url: '/manage/jobs', headers: auth })).json<{ problems?: unknown[] }>();
        return status.problems?.length === 0;
      });
    } finally {
      await app.close();
      await node.runner.stop();
    }
  });
});
