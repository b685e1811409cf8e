/**
 * Worker threads under `leasehold start`. A deploy (SIGTERM) gives runs on worker threads the
 * shutdown grace, as it gives runs on the event loop: a `thread: 'worker'` job or a worker task
 * that ends within the grace is recorded `succeeded`; one still running after it is terminated
 * and recorded `interrupted`, never `failed`. A thread that outgrows its `resourceLimits` fails
 * its task with `workerOutOfMemory`, and the node goes on serving. Real node processes, their
 * runs recorded in a real redis-server.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { runLeasehold, spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

interface JobRecord {
  readonly id: string;
  readonly runs: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly interrupted: number;
  readonly lastOutcome: string | null;
}

/** Starts a node with the fixture's worker job or worker task, each taking `workMs`, or its tasks past their limits. */
function node(only: 'job' | 'task' | 'oom', prefix: string, grace: string, workMs: number): NodeProc {
  return spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-worker-node.ts', '--port', '0'], {
    REDIS_URL: redis.url,
    LEASEHOLD_PREFIX: prefix,
    LEASEHOLD_SHUTDOWN_GRACE: grace,
    LOG_LEVEL: 'debug',
    ONLY: only,
    WORK_MS: String(workMs),
  });
}

/** Sends SIGTERM once the work has started in its thread; the ms from the signal to the exit, and the exit code. */
async function deploy(p: NodeProc, started: string): Promise<{ code: number | null; tookMs: number }> {
  // A .ts jobs module is compiled at start, in the node and again in the thread: slow on a loaded machine.
  await p.waitFor((l) => l['msg'] === started, 40_000);
  const t0 = performance.now();
  p.kill('SIGTERM');
  const { code } = await p.exited;
  return { code, tookMs: performance.now() - t0 };
}

/** The job's record in Redis, as `leasehold status --json` reads it after the node has gone. */
async function record(prefix: string, id: string): Promise<JobRecord> {
  const { code, stdout, stderr } = await runLeasehold(['status', '--json', '--redis-url', redis.url, '--prefix', prefix]);
  assert.equal(code, 0, stderr);
  const job = (JSON.parse(stdout) as { jobs: JobRecord[] }).jobs.find((j) => j.id === id);
  assert.ok(job, `job ${id} is recorded: ${stdout}`);
  return job;
}

test('SIGTERM during a 1.5 s run of a thread: "worker" job with a 10 s grace: the run ends in its thread and is recorded succeeded', async () => {
  const p = node('job', 'grace-job-ok', '10s', 1_500);
  const { code, tookMs } = await deploy(p, 'slow job started');
  assert.equal(code, 0, p.stderr());
  assert.ok(p.lines.some((l) => l['msg'] === 'slow job finished' && l['jobId'] === 'slow-job'), 'the thread was not cut short');
  assert.ok(tookMs < 10_000, `the node exited once the run ended, not after the whole grace: ${Math.round(tookMs)} ms`);
  const job = await record('grace-job-ok', 'slow-job');
  assert.deepEqual([job.runs, job.succeeded, job.failed, job.interrupted, job.lastOutcome], [1, 1, 0, 0, 'succeeded'], JSON.stringify(job));
});

test('SIGTERM during a thread: "worker" job run longer than the grace: its thread is terminated after the grace and the run recorded interrupted, not failed', async () => {
  const p = node('job', 'grace-job-long', '2s', 60_000);
  const { code, tookMs } = await deploy(p, 'slow job started');
  assert.equal(code, 0, p.stderr());
  assert.ok(tookMs >= 1_900, `the run had its grace: the node exited ${Math.round(tookMs)} ms after SIGTERM`);
  assert.ok(tookMs < 2_000 + 8_000, `the thread was terminated after the grace: ${Math.round(tookMs)} ms`);
  assert.ok(!p.lines.some((l) => l['msg'] === 'slow job finished'));
  const job = await record('grace-job-long', 'slow-job');
  assert.deepEqual([job.runs, job.failed, job.interrupted], [1, 0, 1], JSON.stringify(job));
  assert.ok(p.lines.some((l) => l['jobId'] === 'slow-job' && l['outcome'] === 'interrupted'), 'logged as interrupted');
});

test('SIGTERM during a 1.5 s worker task with a 10 s grace: the task ends in its thread and its result reaches the job that awaits it', async () => {
  const p = node('task', 'grace-task-ok', '10s', 1_500);
  const { code, tookMs } = await deploy(p, 'slow task started');
  assert.equal(code, 0, p.stderr());
  const result = p.lines.find((l) => l['msg'] === 'slow task result');
  assert.equal(result?.['result'], 1_500, 'the task succeeded');
  assert.ok(!p.lines.some((l) => l['task'] === 'slow-task' && l['outcome'] !== undefined && l['outcome'] !== 'succeeded'));
  assert.ok(tookMs < 10_000, `${Math.round(tookMs)} ms`);
  const job = await record('grace-task-ok', 'hands-out');
  assert.deepEqual([job.runs, job.succeeded], [1, 1], JSON.stringify(job));
});

test('SIGTERM during a worker task longer than the grace: its thread is terminated after the grace and the task recorded interrupted', async () => {
  const p = node('task', 'grace-task-long', '2s', 60_000);
  const { code, tookMs } = await deploy(p, 'slow task started');
  assert.equal(code, 0, p.stderr());
  assert.ok(tookMs >= 1_900 && tookMs < 2_000 + 8_000, `${Math.round(tookMs)} ms`);
  const ended = p.lines.find((l) => l['task'] === 'slow-task' && l['outcome'] !== undefined);
  assert.equal(ended?.['outcome'], 'interrupted', JSON.stringify(ended));
  assert.ok(p.lines.some((l) => l['executor'] === 'cpu' && l['interrupted'] === 1), 'counted in the executor\'s shutdown line');
  assert.ok(!p.lines.some((l) => l['msg'] === 'slow task finished'));
});

test('a task whose thread outgrows its executor\'s resourceLimits is recorded failed with workerOutOfMemory; the node keeps serving and running tasks', async () => {
  const p = node('oom', 'oom', '2s', 0);
  try {
    const listening = await p.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 40_000);
    const failed = await p.waitFor((l) => l['jobId'] === 'hands-out-hog' && l['outcome'] === 'failed', 40_000);
    assert.match(String(failed['error']), /^task "hog" on worker executor "small": the worker thread ran out of memory under resourceLimits \{ maxOldGenerationSizeMb: 32 \}/);
    const taskLine = p.lines.find((l) => l['task'] === 'hog' && l['outcome'] === 'failed');
    assert.equal((taskLine?.['err'] as { code?: string } | undefined)?.code, 'workerOutOfMemory', JSON.stringify(taskLine));
    const fitting = p.lines.filter((l) => l['msg'] === 'fitting task result').length;
    await p.waitFor((l) => l['msg'] === 'fitting task result' && p.lines.filter((x) => x['msg'] === 'fitting task result').length >= fitting + 3, 20_000);
    const base = `http://127.0.0.1:${String(listening['port'])}`;
    const { executors } = (await (await fetch(`${base}/manage/executors`)).json()) as { executors: Array<{ name: string; failed: number; succeeded: number }> };
    const small = executors.find((e) => e.name === 'small');
    assert.equal(small?.failed, 1, JSON.stringify(executors));
    assert.ok((small?.succeeded ?? 0) >= 3);
    assert.equal(p.child.exitCode, null, 'the node lives');
  } finally {
    p.kill('SIGTERM');
    assert.equal((await p.exited).code, 0, p.stderr());
  }
});
