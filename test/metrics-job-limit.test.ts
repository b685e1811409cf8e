/**
 * The metrics' job limit as a user sets it: `LEASEHOLD_METRICS_JOB_LIMIT` on a real
 * `leasehold start` node, whose `GET /metrics` names the first jobs it registered and counts the
 * runs of the rest under `job="(other)"`; a bad value is refused, naming the setting.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readConfig } from '../src/cli/config.js';
import { createRunner } from '../src/index.js';
import { spawnLeasehold } from './helpers/node.js';
import { memoryLogger } from './helpers/log.js';
import { jobsNamedIn, samples } from './helpers/metrics.js';

const silent = memoryLogger().logger;

test('LEASEHOLD_METRICS_JOB_LIMIT=1: the first job keeps its series, the runs of the others add up in job="(other)"', async () => {
  // jobs-basic.mjs registers overrunner, slowpoke, always-fails and long-runner, in that order.
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-basic.mjs', '--port', '0', '--local'], { LEASEHOLD_METRICS_JOB_LIMIT: '1' });
  const listening = await node.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 15_000);
  await node.waitFor((l) => l['jobId'] === 'slowpoke' && l['outcome'] === 'timedOut');
  await node.waitFor((l) => l['jobId'] === 'always-fails' && l['outcome'] === 'failed');
  const text = await (await fetch(`http://127.0.0.1:${String(listening['port'])}/metrics`)).text();
  const s = samples(text);
  assert.deepEqual([...jobsNamedIn(text)].sort(), ['(other)', 'overrunner']);
  assert.ok((s.get('leasehold_job_runs_total{job="(other)",outcome="timedOut"}') ?? 0) >= 1, 'slowpoke timed out');
  assert.ok((s.get('leasehold_job_runs_total{job="(other)",outcome="failed"}') ?? 0) >= 1, 'always-fails failed');
  assert.ok((s.get('leasehold_job_failing_streak{job="(other)"}') ?? 0) >= 1, 'the longest failing streak among the others');
  assert.ok(s.has('leasehold_job_interval_seconds{job="overrunner"}'));
  node.kill('SIGTERM');
  assert.equal((await node.exited).code, 0);
});

test('a metrics job limit that is not a whole number from 0 to 1,000,000 is refused, naming the setting', () => {
  for (const bad of ['lots', '-1', '1.5', '1000001']) {
    assert.throws(() => readConfig({}, { LEASEHOLD_METRICS_JOB_LIMIT: bad }), new RegExp(`LEASEHOLD_METRICS_JOB_LIMIT/--metrics-job-limit: "${bad.replace('.', '\\.')}" is not a whole number from 0 to 1000000`));
  }
  assert.equal(readConfig({}, { LEASEHOLD_METRICS_JOB_LIMIT: '0' }).metricsJobLimit, 0);
  assert.equal(readConfig({ 'metrics-job-limit': '25000' }, {}).metricsJobLimit, 25_000);
  assert.throws(() => createRunner({ local: true, metricsJobLimit: -1 }), /metricsJobLimit must be a whole number from 0 to 1000000, got -1/);
});

test('runner.remove gives a job\'s place under the limit to the next job added, and drops its series', async () => {
  const runner = createRunner({ local: true, metricsJobLimit: 1, logger: silent });
  const ran = new Set<string>();
  runner.on('runEnded', (e) => void ran.add(e.jobId));
  runner.add({ id: 'first', fixedRate: '50ms', run: () => undefined });
  await runner.start();
  try {
    for (const deadline = Date.now() + 10_000; !ran.has('first'); ) {
      assert.ok(Date.now() < deadline, 'first ran');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(runner.remove('first'), true);
    runner.add({ id: 'second', fixedRate: '50ms', run: () => undefined });
    for (const deadline = Date.now() + 10_000; !ran.has('second'); ) {
      assert.ok(Date.now() < deadline, 'second ran');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual([...jobsNamedIn(await runner.metrics.metrics())], ['second']);
  } finally {
    await runner.stop();
  }
});
