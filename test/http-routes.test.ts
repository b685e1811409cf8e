/**
 * The fastify plugin through `fastify.inject()` (SPEC 5), over a real runner and a real
 * redis-server: status, one job, admin actions with no, malformed, wrong and right tokens
 * and with admin disabled, bad paths, bodies and headers (4xx, never 5xx), health 200/503,
 * metrics; and no token or Redis password in any log line.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { keys as keyNames } from '../src/redis/keys.js';
import { Scheduler } from '../src/runner/runner.js';
import { createNode, type StatusNode as StatusLayer } from '../src/create/index.js';
import type { ClusterStatus, JobDetail } from '../src/status/model.js';
import { memoryLogger } from './helpers/log.js';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';

const TOKEN = 'T0ken-that-must-never-be-logged';
const PASSWORD = 'redis-Passw0rd-never-logged';

async function until<T>(what: string, f: () => Promise<T | undefined | false>, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

interface Node {
  core: Scheduler;
  layer: StatusLayer;
  app: FastifyInstance;
  stop(): Promise<void>;
}

async function node(opts: { url: string; prefix: string; token?: string; jobs: Array<Record<string, unknown>>; logger: ReturnType<typeof memoryLogger>['logger']; id?: string }): Promise<Node> {
  const layer = createNode({ instanceId: opts.id ?? 'node-1', logger: opts.logger, shutdownGraceMs: 200, redis: { url: opts.url }, prefix: opts.prefix, ...(opts.token ? { adminToken: opts.token } : {}), version: '9.9.9' });
  const core = layer.core;
  for (const j of opts.jobs) core.add(j);
  await layer.start();
  core.start();
  const app: FastifyInstance = Fastify({ loggerInstance: opts.logger as FastifyBaseLogger });
  await app.register(layer.routes);
  await app.ready();
  return {
    core,
    layer,
    app,
    async stop() {
      await app.close();
      await core.stop();
      await layer.stop();
    },
  };
}

describe('http routes', () => {
  let server: TestRedis;
  let admin: Redis;
  let url: string;
  const log = memoryLogger();
  let main: Node;
  let prefixN = 0;
  const prefix = () => `http-test-${++prefixN}`;
  const auth = (token = TOKEN) => ({ authorization: `Bearer ${token}` });
  let p1: string;

  before(async () => {
    server = await startRedis({ args: ['--requirepass', PASSWORD] });
    admin = server.client();
    url = server.url;
    p1 = prefix();
    main = await node({
      url,
      prefix: p1,
      token: TOKEN,
      logger: log.logger,
      jobs: [
        { id: 'tick', fixedRate: '200ms', run: () => undefined },
        { id: 'flaky', fixedRate: '150ms', run: () => Promise.reject(new Error('upstream said no')) },
        { id: 'solo', scope: 'installation', fixedRate: '1h', initialDelay: '1h', run: () => sleep(400) },
        { id: 'report.daily', scope: 'installation', cron: '0 0 6 * * *', zone: 'Europe/Berlin', run: () => undefined },
      ],
    });
  });
  after(async () => {
    await main.stop();
    await server.stop();
    const text = log.text();
    assert.ok(!text.includes(TOKEN), 'the admin token never appears in a log line');
    assert.ok(!text.includes(PASSWORD), 'the Redis password never appears in a log line');
  });

  it('GET /manage/jobs: every job with schedule, scope, state, counters; the live instances', async () => {
    const status = await until('runs counted', async () => {
      const res = await main.app.inject({ method: 'GET', url: '/manage/jobs' });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /application\/json/);
      const s = res.json<ClusterStatus>();
      return (s.jobs.find((j) => j.id === 'tick')?.runs ?? 0) >= 2 && s;
    });
    assert.deepEqual(status.jobs.map((j) => j.id), ['flaky', 'report.daily', 'solo', 'tick']);
    const daily = status.jobs.find((j) => j.id === 'report.daily');
    assert.deepEqual(daily?.schedule, { kind: 'cron', expression: '0 0 6 * * *', zone: 'Europe/Berlin', intervalMs: 86_400_000 });
    assert.equal(daily?.scope, 'installation');
    assert.equal(daily?.runs, 0);
    assert.match(daily?.nextDueAt ?? '', /T0[45]:00:00\.000Z$/, 'six in Berlin');
    const tick = status.jobs.find((j) => j.id === 'tick');
    assert.equal(tick?.scope, 'instance');
    assert.equal(tick?.state, 'ok');
    assert.equal(tick?.lastOutcome, 'succeeded');
    assert.equal(tick?.instances[0]?.instanceId, 'node-1');
    assert.equal(tick?.instances[0]?.live, true);
    for (const f of ['runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'overruns', 'skipped', 'missed'] as const) {
      assert.equal(typeof tick?.[f], 'number', f);
    }
    assert.deepEqual(status.instances.map((i) => [i.id, i.version, i.pid]), [['node-1', '9.9.9', process.pid]]);
  });

  it('GET /manage/jobs/:id: one job with its recent runs; 404 for an unknown id', async () => {
    const res = await main.app.inject({ method: 'GET', url: '/manage/jobs/flaky' });
    assert.equal(res.statusCode, 200);
    const job = res.json<JobDetail>();
    assert.equal(job.id, 'flaky');
    assert.ok(job.recentRuns.length >= 1);
    assert.equal(job.recentRuns[0]?.outcome, 'failed');
    assert.equal(job.recentRuns[0]?.error, 'upstream said no');
    assert.equal(job.lastError, 'upstream said no');
    const missing = await main.app.inject({ method: 'GET', url: '/manage/jobs/nope' });
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(missing.json(), { statusCode: 404, error: 'Not Found', message: 'unknown job "nope"' });
  });

  it('admin routes: 401 without or with a malformed header, 403 with a wrong token, 200 with the right one', async () => {
    const paths = ['/manage/jobs/tick/pause', '/manage/jobs/tick/resume', '/manage/jobs/tick/run'];
    for (const path of paths) {
      const none = await main.app.inject({ method: 'POST', url: path });
      assert.equal(none.statusCode, 401, path);
      assert.equal(none.headers['www-authenticate'], 'Bearer');
      for (const bad of ['Basic dXNlcjpwdw==', 'Bearer', 'Bearer ', `Bearer ${TOKEN} extra`, TOKEN]) {
        const malformed = await main.app.inject({ method: 'POST', url: path, headers: { authorization: bad } });
        assert.equal(malformed.statusCode, 401, `${path} ${bad}`);
      }
      const wrong = await main.app.inject({ method: 'POST', url: path, headers: auth(`${TOKEN}x`) });
      assert.equal(wrong.statusCode, 403, path);
      assert.equal(wrong.json<{ message: string }>().message, 'wrong admin token');
      const short = await main.app.inject({ method: 'POST', url: path, headers: auth('x') });
      assert.equal(short.statusCode, 403, path);
    }
    // Without the token nothing else is looked at: a bad body or an unknown job still gets 401/403.
    const sneaky = await main.app.inject({ method: 'POST', url: '/manage/jobs/nope/pause', headers: { 'content-type': 'application/json' }, payload: '{"x":1}' });
    assert.equal(sneaky.statusCode, 401);
  });

  it('pause and resume write the settings hash and apply at once; state paused in the status', async () => {
    const k = keyNames(p1);
    const res = await main.app.inject({ method: 'POST', url: '/manage/jobs/tick/pause', headers: auth() });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { jobId: 'tick', paused: true, notified: 1 });
    assert.equal(await admin.hget(k.settings, 'tick.paused'), 'true');
    assert.equal(main.core.job('tick')?.state, 'paused');
    const status = (await main.app.inject({ method: 'GET', url: '/manage/jobs/tick' })).json<JobDetail>();
    assert.equal(status.state, 'paused');
    // Counted on the node itself: the stats in Redis may still be catching up with runs that
    // started before the pause.
    let startedWhilePaused = 0;
    const off = main.core.on('runStarted', (e) => {
      if (e.jobId === 'tick') startedWhilePaused++;
    });
    // The job's answer is a snapshot at most a second old (and the stats are batched).
    await until('paused ticks counted as skips', async () => (await main.app.inject({ method: 'GET', url: '/manage/jobs/tick' })).json<JobDetail>().skippedPaused >= 1);
    off();
    assert.equal(startedWhilePaused, 0, 'no run starts while paused');
    const resumed = await main.app.inject({ method: 'POST', url: '/manage/jobs/tick/resume', headers: { ...auth(), 'content-type': 'application/json' }, payload: '' });
    assert.equal(resumed.statusCode, 200);
    assert.equal(await admin.hget(k.settings, 'tick.paused'), 'false');
    assert.equal(main.core.job('tick')?.state, 'ok');
    const unknown = await main.app.inject({ method: 'POST', url: '/manage/jobs/nope/pause', headers: auth() });
    assert.equal(unknown.statusCode, 404);
  });

  it('run now: an installation job starts here once; an instance job on every node', async () => {
    const first = await main.app.inject({ method: 'POST', url: '/manage/jobs/solo/run', headers: auth(), payload: {} });
    assert.equal(first.statusCode, 202);
    assert.equal(first.json<{ scope: string }>().scope, 'installation');
    const second = await main.app.inject({ method: 'POST', url: '/manage/jobs/solo/run', headers: auth() });
    assert.equal(second.statusCode, 409, 'not beside a run in progress');
    assert.match(second.json<{ message: string }>().message, /running/);
    const done = await until('the manual run recorded', async () => {
      const j = (await main.app.inject({ method: 'GET', url: '/manage/jobs/solo' })).json<JobDetail>();
      return j.runs === 1 && j;
    });
    assert.equal(done.recentRuns[0]?.manual, true);
    assert.equal(done.lastOutcome, 'succeeded');

    const inst = await main.app.inject({ method: 'POST', url: '/manage/jobs/report.daily/run', headers: auth() });
    assert.equal(inst.statusCode, 202);
    const flaky = await main.app.inject({ method: 'POST', url: '/manage/jobs/tick/run', headers: auth() });
    assert.equal(flaky.statusCode, 202);
    assert.deepEqual([flaky.json<{ scope: string }>().scope, flaky.json<{ notified: number }>().notified], ['instance', 1]);
  });

  it('bad paths, bodies and headers get 4xx, never 5xx', async () => {
    const cases: Array<{ method: 'GET' | 'POST'; url: string; headers?: Record<string, string>; payload?: string; status: number }> = [
      { method: 'GET', url: '/manage/jobs/bad%20id', status: 400 },
      { method: 'GET', url: '/manage/jobs/%zz', status: 400 },
      { method: 'GET', url: '/manage/jobs/{x}', status: 400 },
      { method: 'GET', url: `/manage/jobs/${'a'.repeat(90)}`, status: 404 },
      { method: 'GET', url: '/manage/jobs/a/b/c', status: 404 },
      { method: 'POST', url: '/manage/jobs/tick/explode', headers: auth(), status: 404 },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"x":1}', status: 400 },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{oops', status: 400 },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { ...auth(), 'content-type': 'application/json' }, payload: '[1]', status: 400 },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { ...auth(), 'content-type': 'application/json' }, payload: 'x'.repeat(10_000), status: 413 },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { ...auth(), 'content-type': 'text/plain' }, payload: 'pause it', status: 400 },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { ...auth(), 'content-type': 'application/xml' }, payload: '<a/>', status: 415 },
      { method: 'POST', url: '/manage/jobs/tick/pause', headers: { authorization: `Bearer ${'x'.repeat(5_000)}` }, status: 403 },
      { method: 'GET', url: '/manage/jobs', headers: { authorization: 'x'.repeat(5_000) }, status: 400 },
      { method: 'POST', url: '/manage/jobs/bad%20id/pause', headers: auth(), status: 400 },
      { method: 'GET', url: '/health?x=1&x=2', status: 200 },
    ];
    for (const c of cases) {
      const res = await main.app.inject({ method: c.method, url: c.url, ...(c.headers ? { headers: c.headers } : {}), ...(c.payload !== undefined ? { payload: c.payload } : {}) });
      if (c.url.startsWith('/health')) {
        assert.ok(res.statusCode === 200 || res.statusCode === 503, `${c.url}: ${res.statusCode}`);
        continue;
      }
      assert.equal(res.statusCode, c.status, `${c.method} ${c.url.slice(0, 40)} ${c.payload?.slice(0, 20) ?? ''}: ${res.body.slice(0, 200)}`);
      assert.ok(!res.body.includes('    at '), 'no stack trace');
    }
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`q${i}`, '1']));
    const res = await main.app.inject({ method: 'GET', url: '/manage/jobs', query: many });
    assert.equal(res.statusCode, 400);
  });

  it('GET /health: 503 naming a degraded job; 200 when all is well', async () => {
    const res = await until('flaky degraded', async () => {
      const r = await main.app.inject({ method: 'GET', url: '/health' });
      return r.statusCode === 503 && r;
    });
    const body = res.json<{ status: string; reasons: Array<{ check: string; jobId?: string; reasons?: string[] }> }>();
    assert.equal(body.status, 'unavailable');
    const flaky = body.reasons.find((r) => r.jobId === 'flaky');
    assert.match(flaky?.reasons?.[0] ?? '', /failing streak/);
    assert.ok(!body.reasons.some((r) => r.jobId === 'tick'));
    // The probes' routes do not judge jobs.
    assert.equal((await main.app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200);
    assert.deepEqual((await main.app.inject({ method: 'GET', url: '/health/live' })).json(), { status: 'ok', reasons: [] });

    const hp = prefix();
    const healthy = await node({ url, prefix: hp, logger: log.logger, id: 'node-2', jobs: [{ id: 'fine', fixedRate: '100ms', run: () => undefined }] });
    try {
      const ok = await healthy.app.inject({ method: 'GET', url: '/health' });
      assert.equal(ok.statusCode, 200);
      assert.deepEqual(ok.json(), { status: 'ok', reasons: [] });
      // A bad schedule in the settings hash: invalidSchedule, and health says so.
      await admin.hset(keyNames(hp).settings, 'fine.fixedRate', 'soon');
      const bad = await until('invalid schedule', async () => {
        const r = await healthy.app.inject({ method: 'GET', url: '/health' });
        return r.statusCode === 503 && r.json<{ reasons: Array<{ jobId?: string; state?: string }> }>();
      });
      assert.equal(bad.reasons[0]?.state, 'invalidSchedule');
    } finally {
      await healthy.stop();
    }
  });

  it('admin refused outright when no token is configured', async () => {
    const open = await node({ url, prefix: prefix(), logger: log.logger, id: 'node-3', jobs: [{ id: 'x', fixedRate: '1h', initialDelay: '1h', run: () => undefined }] });
    try {
      for (const headers of [{}, auth(), auth('')]) {
        const res = await open.app.inject({ method: 'POST', url: '/manage/jobs/x/pause', headers });
        assert.equal(res.statusCode, 403);
        assert.match(res.json<{ message: string }>().message, /admin routes are disabled/);
      }
    } finally {
      await open.stop();
    }
  });

  it('GET /metrics: Prometheus text with the leasehold metrics and the process metrics', async () => {
    const res = await main.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const samples = new Map<string, number>();
    for (const line of res.body.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
      assert.ok(m, `a sample line: ${line}`);
      samples.set(m[1] as string, Number(m[2]));
    }
    for (const name of ['leasehold_job_runs_total', 'leasehold_job_run_duration_seconds', 'leasehold_job_skips_total', 'leasehold_job_missed_total', 'leasehold_job_start_lag_seconds', 'leasehold_lease_lost_total']) {
      assert.match(res.body, new RegExp(`^# TYPE ${name} (counter|histogram)$`, 'm'), name);
    }
    assert.ok((samples.get('leasehold_job_runs_total{job="tick",outcome="succeeded"}') ?? 0) >= 2);
    assert.ok((samples.get('leasehold_job_runs_total{job="flaky",outcome="failed"}') ?? 0) >= 3);
    assert.ok(samples.has('leasehold_job_run_duration_seconds_bucket{le="0.01",job="tick",outcome="succeeded"}'));
    assert.ok((samples.get('leasehold_job_start_lag_seconds_count{job="tick"}') ?? 0) >= 2);
    assert.equal(samples.get('leasehold_lease_lost_total{job="solo"}'), 0);
    assert.equal(samples.get('leasehold_job_missed_total{job="solo"}'), 0);
    assert.ok((samples.get('leasehold_job_skips_total{job="tick",reason="paused"}') ?? 0) >= 1);
    assert.equal(samples.get('leasehold_job_interval_seconds{job="tick"}'), 0.2);
    assert.equal(samples.get('leasehold_job_interval_seconds{job="report.daily"}'), 86_400);
    assert.ok((samples.get('leasehold_job_failing_streak{job="flaky"}') ?? 0) >= 3);
    assert.equal(samples.get('leasehold_job_invalid_schedule{job="tick"}'), 0);
    assert.ok((samples.get('leasehold_job_last_success_timestamp_seconds{job="tick"}') ?? 0) > Date.now() / 1000 - 60);
    assert.ok(samples.has('process_cpu_user_seconds_total'));
    assert.ok(samples.has('nodejs_eventloop_lag_seconds'));
  });

  it('Redis unreachable: /health 503 with the reason, status routes 503, runs go on', async () => {
    const port = await freePort();
    const ran: number[] = [];
    const gone = await node({ url: `redis://:${PASSWORD}@127.0.0.1:${port}`, prefix: prefix(), logger: log.logger, id: 'node-4', token: TOKEN, jobs: [{ id: 'alone', fixedRate: '100ms', run: () => void ran.push(Date.now()) }] });
    try {
      const res = await gone.app.inject({ method: 'GET', url: '/health' });
      assert.equal(res.statusCode, 503);
      const body = res.json<{ reasons: Array<{ check: string; message: string }> }>();
      assert.equal(body.reasons[0]?.check, 'redis');
      assert.match(body.reasons[0]?.message ?? '', /Redis at 127\.0\.0\.1:\d+ is unreachable/);
      for (const path of ['/manage/jobs', '/manage/jobs/alone']) {
        const r = await gone.app.inject({ method: 'GET', url: path });
        assert.equal(r.statusCode, 503, path);
        assert.equal(r.json<{ error: string }>().error, 'Service Unavailable');
      }
      const ready = await gone.app.inject({ method: 'GET', url: '/health/ready' });
      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json<{ reasons: Array<{ check: string }> }>().reasons[0]?.check, 'redis');
      assert.equal((await gone.app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200);
      const pause = await gone.app.inject({ method: 'POST', url: '/manage/jobs/alone/pause', headers: auth() });
      assert.equal(pause.statusCode, 503);
      await sleep(400);
      assert.ok(ran.length >= 3, `instance jobs run without Redis: ${ran.length}`);
    } finally {
      await gone.stop();
    }
  });

  it('GET /manage/jobs answers every one of 1,000 jobs, again and again (its latency is measured by the benchmark, S4)', async () => {
    const p = prefix();
    const k = keyNames(p);
    const now = new Date().toISOString();
    const pipe = admin.pipeline();
    for (let i = 0; i < 1_000; i++) {
      const id = `bulk-${i}`;
      pipe.sadd(k.jobs, id).hset(k.stats(id), { scope: 'installation', scheduleKind: 'cron', schedule: '0 * * * * *', zone: 'UTC', intervalMs: '60000', runs: '5', succeeded: '5', lastOutcome: 'succeeded', lastStartedAt: now, createdAt: now, seenAt: now });
    }
    await pipe.exec();
    const many = await node({ url, prefix: p, logger: log.logger, id: 'node-5', jobs: [] });
    try {
      for (let i = 0; i < 20; i++) {
        const res = await many.app.inject({ method: 'GET', url: '/manage/jobs' });
        assert.equal(res.statusCode, 200);
        const jobs = res.json<ClusterStatus>().jobs;
        assert.equal(jobs.length, 1_000);
        assert.ok(jobs.every((j) => j.runs === 5 && j.lastOutcome === 'succeeded'));
        await sleep(2);
      }
    } finally {
      await many.stop();
    }
  });
});
