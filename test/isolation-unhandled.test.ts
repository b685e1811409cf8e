/**
 * Careless job code cannot take a node down (SPEC 3.7, 8): under `leasehold start` a rejection
 * nobody handles is logged once per occurrence with the job or task it came from, counted in
 * `leasehold_unhandled_errors_total{kind}`, and the node keeps running; a fire-and-forget
 * `@Async` call that fails is a task failure (logged once, counted), never an unhandled
 * rejection; an uncaught exception stops the node gracefully (runs recorded, leases released,
 * stats flushed) with a non-zero exit. Real nodes, a real redis-server.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const FIXTURE = 'test/fixtures/jobs-careless.ts';

function start(prefix: string, env: Record<string, string> = {}): NodeProc {
  return spawnLeasehold(['start', '--jobs', FIXTURE, '--port', '0'], { REDIS_URL: redis.url, LEASEHOLD_PREFIX: prefix, LEASEHOLD_SHUTDOWN_GRACE: '500ms', ...env });
}

async function metricsOf(node: NodeProc): Promise<string> {
  const status = await node.waitFor((l) => typeof l['url'] === 'string' && String(l['url']).endsWith('/manage/jobs'));
  const base = String(status['url']).replace(/\/manage\/jobs$/, '');
  return (await fetch(`${base}/metrics`)).text();
}

const counted = (metrics: string, kind: string): number => Number(new RegExp(`^leasehold_unhandled_errors_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);

test('rejections nobody handles in jobs are logged with their job, counted, and the node keeps running; a failing fire-and-forget @Async call is a task failure', async () => {
  const node = start('careless-log');
  await node.waitFor((l) => l['msg'] === 'leasehold runner started');
  const forgotten = await node.waitFor((l) => l['kind'] === 'rejection' && l['jobId'] === 'forgets-rejection');
  assert.equal(forgotten['level'], 50);
  assert.match(String(forgotten['msg']), /job "forgets-rejection".*nobody awaits this/);
  assert.equal(typeof forgotten['runId'], 'string', 'the run is named');
  const refused = await node.waitFor((l) => l['kind'] === 'rejection' && l['jobId'] === 'floods-queue');
  assert.match(String(refused['msg']), /executor "tight"/);
  const inTask = await node.waitFor((l) => l['kind'] === 'rejection' && l['task'] === 'slow');
  assert.match(String(inTask['msg']), /in task "slow": a task forgot this/);
  assert.equal(typeof inTask['taskId'], 'string', 'the task is named');
  await sleep(2_000);
  assert.equal(node.child.exitCode, null, 'the node is still running');
  const steadyBefore = node.lines.filter((l) => l['jobId'] === 'steady' && l['msg'] === 'run succeeded').length;
  await sleep(500);
  const steadyAfter = node.lines.filter((l) => l['jobId'] === 'steady' && l['msg'] === 'run succeeded').length;
  assert.ok(steadyAfter > steadyBefore, `other jobs keep running (${steadyBefore} then ${steadyAfter} runs)`);

  // Each occurrence is logged once and counted.
  const rejectionsLogged = node.lines.filter((l) => l['kind'] === 'rejection').length;
  const metrics = await metricsOf(node);
  const rejectionsCounted = counted(metrics, 'rejection');
  assert.ok(rejectionsCounted >= rejectionsLogged && rejectionsCounted <= node.lines.filter((l) => l['kind'] === 'rejection').length, `${rejectionsCounted} counted, ${rejectionsLogged} logged before the scrape`);
  assert.ok(rejectionsLogged >= 10, `a rejection per run: ${rejectionsLogged}`);
  assert.equal(counted(metrics, 'exception'), 0);

  // The @Async call nobody awaits: its failures are the task's (the first logged, each counted), never an unhandled rejection.
  assert.equal(node.lines.filter((l) => /mailbox/.test(String(l['msg'])) && l['kind'] !== undefined).length, 0, 'no unhandled rejection of the @Async call');
  const mailWarnings = node.lines.filter((l) => l['task'] === 'Mailer.send' && l['level'] === 40);
  assert.equal(mailWarnings.length, 1, 'the first failure is logged, not every repeat');
  assert.match(String(mailWarnings[0]?.['msg']), /task "Mailer.send" failed: the mailbox of ada is full/);
  assert.ok(Number(/^leasehold_tasks_total\{executor="mail",task="Mailer.send",outcome="failed"\} (\d+)$/m.exec(metrics)?.[1]) >= 3, 'each failure counted');

  node.kill('SIGTERM');
  assert.equal((await node.exited).code, 0);
});

test('an uncaught exception in job code stops the node gracefully: runs recorded, the lease released, the stats flushed, a non-zero exit', async () => {
  const prefix = 'careless-throw';
  const node = start(prefix, { CARELESS_THROW: '1' });
  await node.waitFor((l) => l['jobId'] === 'holder' && l['msg'] === 'run started');
  const client = redis.client();
  assert.ok(await client.exists(`${prefix}:{holder}:lease`), 'the installation job holds its lease');
  const thrown = await node.waitFor((l) => l['kind'] === 'exception', 15_000);
  const t0 = Date.now();
  assert.equal(thrown['jobId'], 'throws-later', 'the exception is attributed to the job whose code threw it');
  assert.match(String(thrown['msg']), /thrown where nobody catches it/);
  const { code } = await node.exited;
  assert.notEqual(code, 0, 'a non-zero exit');
  assert.ok(Date.now() - t0 < 8_000, `exits within the grace plus a margin (${Date.now() - t0} ms)`);
  assert.ok(node.lines.some((l) => l['jobId'] === 'holder' && l['outcome'] === 'interrupted'), 'the run in progress is recorded interrupted');
  assert.equal(await client.exists(`${prefix}:{holder}:lease`), 0, 'the lease is released');
  const holder = await client.hgetall(`${prefix}:{holder}:stats`);
  assert.equal(holder['interrupted'], '1', `the interrupted run is in the stats: ${JSON.stringify(holder)}`);
  const steady = await client.hgetall(`${prefix}:{steady}:stats`);
  const steadyRuns = node.lines.filter((l) => l['jobId'] === 'steady' && l['msg'] === 'run succeeded').length;
  assert.equal(Number(steady['runs']), steadyRuns, 'every run of the steady job reached the stats');
});
