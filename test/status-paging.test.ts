/**
 * `GET /manage/jobs?limit=&cursor=&state=&q=`: pages cut on the server from the cached status,
 * in id order, over a real runner and a real redis-server. Following `nextCursor` visits every
 * job once, even when jobs are added between two pages; `state` and `q` filter before the page
 * is cut and `total` counts the matches; a malformed parameter is a 400 naming it; and above
 * 5,000 jobs the unpaged answer is refused, naming the paged form.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { createRunner, defineJob, type Runner } from '../src/index.js';
import type { JobsPage } from '../src/status/page.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const noop = async (): Promise<void> => undefined;
const job = (id: string, description: string) => defineJob({ id, description, cron: '0 0 3 * * *', run: noop });
const ADMIN = 'admin-token-of-the-paging-test';

async function until<T>(what: string, f: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('paged job list', () => {
  let server: TestRedis;
  let runner: Runner;
  let app: FastifyInstance;
  const get = async (url: string): Promise<{ status: number; body: Record<string, unknown> }> => {
    const r = await app.inject({ method: 'GET', url });
    return { status: r.statusCode, body: r.json<Record<string, unknown>>() };
  };
  const page = async (url: string): Promise<JobsPage> => {
    const r = await get(url);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as unknown as JobsPage;
  };

  before(async () => {
    server = await startRedis();
    runner = createRunner({ redisUrl: server.url, prefix: 'paging', instanceId: 'pager', adminToken: ADMIN, logger: memoryLogger().logger });
    // 250 jobs: every 10th is about invoices, job-000 to job-249.
    for (let i = 0; i < 250; i++) runner.add(job(`job-${String(i).padStart(3, '0')}`, i % 10 === 0 ? `Send the INVOICES of batch ${i}` : `refresh cache ${i}`));
    await runner.start();
    app = Fastify();
    await app.register(runner.routes);
    await app.ready();
    // A job is in the status once its stats hash exists; its description (scope, schedule, text)
    // comes with its registration batch, which a read may see only after that.
    await until('the 250 jobs in the status with their descriptions', async () => {
      const all = await page('/manage/jobs?limit=250');
      return all.total === 250 && all.jobs.every((j) => j.scope !== null);
    });
  });
  after(async () => {
    await app?.close();
    await runner?.stop();
    await server?.stop();
  });

  it('following nextCursor visits every job once, in id order, limit at a time', async () => {
    const seen: string[] = [];
    let url = '/manage/jobs?limit=100';
    for (let n = 0; n < 10; n++) {
      const p = await page(url);
      assert.equal(p.total, 250);
      assert.ok(p.jobs.length <= 100);
      assert.ok(Array.isArray(p.instances) && typeof p.generatedAt === 'string');
      seen.push(...p.jobs.map((j) => j.id));
      if (p.nextCursor === null) break;
      url = `/manage/jobs?limit=100&cursor=${encodeURIComponent(p.nextCursor)}`;
    }
    assert.equal(seen.length, 250);
    assert.deepEqual(seen, [...seen].sort());
    assert.equal(new Set(seen).size, 250);
    const first = await page('/manage/jobs?limit=100');
    assert.deepEqual([first.jobs.length, first.jobs[0]?.id, first.jobs[99]?.id], [100, 'job-000', 'job-099']);
    const defaulted = await page('/manage/jobs?cursor=' + encodeURIComponent(first.nextCursor ?? ''));
    assert.equal(defaulted.jobs[0]?.id, 'job-100', 'a cursor alone pages 100 at a time from where it points');
  });

  it('q filters on id and description ignoring case, state on the state; total counts the matches', async () => {
    const invoices = await page('/manage/jobs?q=invoices&limit=10');
    assert.equal(invoices.total, 25);
    assert.deepEqual(invoices.jobs.map((j) => j.id).slice(0, 3), ['job-000', 'job-010', 'job-020']);
    assert.ok(invoices.nextCursor);
    const rest = await page(`/manage/jobs?q=invoices&limit=100&cursor=${encodeURIComponent(invoices.nextCursor)}`);
    assert.deepEqual([rest.total, rest.jobs.length, rest.nextCursor], [25, 15, null]);
    assert.equal((await page('/manage/jobs?q=JOB-24')).total, 10, 'job-240 to job-249');
    assert.equal((await page('/manage/jobs?state=ok&limit=5')).total, 250);
    assert.deepEqual((await page('/manage/jobs?state=paused')).jobs, []);
    const paused = await app.inject({ method: 'POST', url: '/manage/jobs/job-007/pause', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(paused.statusCode, 200, paused.body);
    await until('job-007 paused in the status', async () => (await page('/manage/jobs?state=paused')).total === 1);
    assert.deepEqual((await page('/manage/jobs?state=paused&q=007')).jobs.map((j) => j.id), ['job-007']);
  });

  it('a job added between two pages neither repeats a job nor skips one that was there', async () => {
    const p1 = await page('/manage/jobs?limit=50');
    runner.add(job('job-000a', 'added after the first page, before its cursor'));
    runner.add(job('job-200a', 'added after the first page, after its cursor'));
    await until('the added jobs in the status', async () => (await page('/manage/jobs?limit=1')).total === 252);
    const seen = [...p1.jobs.map((j) => j.id)];
    let cursor = p1.nextCursor;
    while (cursor !== null) {
      const p = await page(`/manage/jobs?limit=50&cursor=${encodeURIComponent(cursor)}`);
      seen.push(...p.jobs.map((j) => j.id));
      cursor = p.nextCursor;
    }
    assert.equal(new Set(seen).size, seen.length, 'no job twice');
    assert.ok(seen.includes('job-200a') && !seen.includes('job-000a'));
    assert.equal(seen.length, 251);
  });

  it('a malformed parameter is a 400 that names it', async () => {
    for (const [query, named] of [
      ['limit=0', /^limit: "0" is not a whole number from 1 to 1000$/],
      ['limit=1001', /^limit: "1001"/],
      ['limit=ten', /^limit: "ten"/],
      ['state=sleeping', /^state: "sleeping" is not one of ok, degraded, invalidSchedule, paused, orphaned$/],
      ['cursor=%21%21', /^cursor: not a cursor this API gave/],
      [`q=${'x'.repeat(201)}`, /^q: at most 200 characters$/],
    ] as const) {
      const r = await get(`/manage/jobs?${query}`);
      assert.equal(r.status, 400, query);
      assert.match(String(r.body['message']), named, query);
    }
  });

  it('the unpaged list stays for small installations, and above 5,000 jobs is refused naming the paged form', async () => {
    const all = await get('/manage/jobs');
    assert.equal(all.status, 200);
    assert.equal((all.body['jobs'] as unknown[]).length, 252);
    for (let i = 0; i < 4_800; i++) runner.add(job(`bulk-${String(i).padStart(4, '0')}`, 'bulk'));
    await until('5,052 jobs in the status', async () => (await page('/manage/jobs?limit=1')).total === 5_052, 60_000);
    const refused = await get('/manage/jobs');
    assert.equal(refused.status, 400);
    assert.match(String(refused.body['message']), /^5052 jobs are more than one answer holds \(5000\): ask for pages, GET \/manage\/jobs\?limit=100 and then &cursor=<nextCursor> of each page$/);
    assert.equal((await page('/manage/jobs?q=bulk-47&limit=1000')).total, 100);
  });
});
