/**
 * `leasehold status --limit --cursor --state --q`: pages of the jobs straight from Redis, cut as
 * `GET /manage/jobs?limit=` cuts them, each with a line naming the command for the next; and an
 * installation of more than 5,000 jobs shows its first page without any flag, never the whole
 * list. Against a real runner of 5,100 jobs and a real redis-server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runStatus } from '../src/cli/status.js';
import { createRunner, defineJob, type Runner } from '../src/index.js';
import type { JobsPage } from '../src/status/page.js';
import { keys } from '../src/redis/keys.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

const PREFIX = 'status-cli-paging';
const JOBS = 5_100;

/** The flags of the command a page's last line names, as a shell would split them. */
function nextArgs(stdout: string): string[] | undefined {
  const m = /next page: leasehold status (.*)$/m.exec(stdout);
  if (!m?.[1]) return undefined;
  return [...m[1].matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((w) => (w[1] !== undefined ? w[1].replace(/'\\''/g, "'") : (w[2] ?? '')));
}

const ids = (stdout: string): string[] => [...stdout.matchAll(/^(job-\d{4})\s/gm)].map((m) => m[1] ?? '');

describe('leasehold status, a page at a time', () => {
  let server: TestRedis;
  let runner: Runner;
  let env: Record<string, string>;

  before(async () => {
    server = await startRedis();
    env = { REDIS_URL: server.url, LEASEHOLD_PREFIX: PREFIX };
    runner = createRunner({ redisUrl: server.url, prefix: PREFIX, instanceId: 'pages', logger: memoryLogger('error').logger });
    for (let i = 0; i < JOBS; i++) {
      runner.add(defineJob({ id: `job-${String(i).padStart(4, '0')}`, description: i % 100 === 7 ? `Send the invoice's copy ${i}` : `job ${i}`, cron: '0 0 3 * * *', run: async () => undefined }));
    }
    await runner.start();
    await until('every job described in Redis', async () => {
      const r = await runStatus(['--json', '--q', "invoice's copy", '--limit', '1'], env);
      return r.code === 0 && (JSON.parse(r.stdout) as JobsPage).total === JOBS / 100;
    }, 60_000);
  });
  after(async () => {
    await runner?.stop();
    await server?.stop();
  });

  it('without flags, more than 5,000 jobs show as the first page of 100 and the command for the next', async () => {
    const r = await runStatus([], env);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(ids(r.stdout), Array.from({ length: 100 }, (_, i) => `job-${String(i).padStart(4, '0')}`));
    assert.match(r.stdout, /^100 of 5100 job\(s\) shown; next page: leasehold status --limit 100 --cursor [A-Za-z0-9_-]+$/m);
    assert.match(r.stdout, /^INSTANCE\s+HOST/m, 'the live instances follow');
    assert.match(r.stdout, /^no executors in use$/m);
    const json = await runStatus(['--json'], env);
    const page = JSON.parse(json.stdout) as JobsPage;
    assert.deepEqual([page.total, page.jobs.length, typeof page.nextCursor], [JOBS, 100, 'string']);
    assert.match(json.stderr, /^leasehold status: 100 of 5100 job\(s\) shown; next page: leasehold status --limit 100 --cursor /);
  });

  it('following the printed commands reaches every job once, in id order', async () => {
    let args: string[] | undefined = ['--limit', '1000'];
    const seen: string[] = [];
    let last = '';
    for (let n = 0; args !== undefined && n < 10; n++) {
      const r = await runStatus(args, env);
      assert.equal(r.code, 0, r.stderr);
      seen.push(...ids(r.stdout));
      last = r.stdout;
      args = nextArgs(r.stdout);
    }
    assert.equal(args, undefined);
    assert.match(last, /^100 of 5100 job\(s\) shown: the last page$/m);
    assert.equal(seen.length, JOBS);
    assert.equal(new Set(seen).size, JOBS);
    assert.deepEqual(seen, [...seen].sort());
  });

  it('--q searches id and description, --state filters; the next command keeps them (quoted for the shell)', async () => {
    const r = await runStatus(['--q', "INVOICE'S copy", '--limit', '20'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(ids(r.stdout)[0], 'job-0007');
    assert.match(r.stdout, /^20 of 51 job\(s\) that match shown; next page: leasehold status --limit 20 --q 'INVOICE'\\''S copy' --cursor \S+$/m);
    const next = nextArgs(r.stdout);
    assert.deepEqual(next?.slice(0, 4), ['--limit', '20', '--q', "INVOICE'S copy"]);
    const second = await runStatus(next ?? [], env);
    assert.equal(ids(second.stdout)[0], 'job-2007');
    assert.deepEqual(ids((await runStatus(['--q', 'job-123'], env)).stdout), Array.from({ length: 10 }, (_, i) => `job-123${i}`));
    assert.match((await runStatus(['--q', 'nothing like it'], env)).stdout, /^no job matches\n\n0 of 0 job\(s\) that match shown: the last page$/m);

    // An operator's pause, as POST /manage/jobs/:id/pause writes it.
    await server.client().hset(keys(PREFIX).settings, 'job-4242.paused', 'true');
    await until('job-4242 paused in Redis', async () => ids((await runStatus(['--state', 'paused'], env)).stdout).includes('job-4242'), 10_000);
    const paused = JSON.parse((await runStatus(['--state', 'paused', '--json'], env)).stdout) as JobsPage;
    assert.deepEqual([paused.total, paused.jobs.map((j) => j.id), paused.nextCursor], [1, ['job-4242'], null]);
  });

  it('a malformed paging flag exits 2 naming it', async () => {
    for (const [args, why] of [
      [['--limit', '0'], /^leasehold status: --limit: "0" is not a whole number from 1 to 1000\n/],
      [['--state', 'asleep'], /^leasehold status: --state: "asleep" is not one of ok, degraded, invalidSchedule, paused, orphaned\n/],
      [['--cursor', '!!'], /^leasehold status: --cursor: not a cursor this API gave/],
    ] as const) {
      const r = await runStatus([...args], env);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, why);
    }
  });
});
