/**
 * Prometheus metrics as a listener of the runner's events (SPEC 5): exact counts by job
 * and outcome or reason, histograms in seconds, one registry per runner, process metrics.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { Emitter } from '../src/runner/events.js';
import type { JobView } from '../src/runner/runner.js';
import { normalizeJob } from '../src/schedule/job.js';
import { readDeclaration } from '../src/schedule/setting.js';
import { Counter, Histogram, Registry } from 'prom-client';
import { createRunnerMetrics, DURATION_BUCKETS, LAG_BUCKETS, METRIC_NAMES, type MetricsCore } from '../src/metrics/prom.js';
import { ErrorCodes, LeaseholdError } from '../src/errors.js';
import { jobsNamedIn, samples } from './helpers/metrics.js';

function fakeCore(jobs: Array<Record<string, unknown>>): MetricsCore & { emitter: Emitter; unregister(id: string): void } {
  const emitter = new Emitter((err) => {
    throw err;
  });
  const views: JobView[] = jobs.map((d) => {
    const job = normalizeJob({ run: () => undefined, ...d });
    return { job, state: 'ok', invalidCause: undefined, schedule: undefined, declared: readDeclaration(job.schedule, {}), nextDueAt: null, running: undefined };
  });
  return {
    emitter,
    on: (e, fn) => emitter.on(e, fn),
    jobs: () => views,
    has: (id) => views.some((v) => v.job.id === id),
    intervalOf: (id) => views.find((v) => v.job.id === id)?.schedule?.trigger.intervalMs,
    unregister: (id) => void views.splice(views.findIndex((v) => v.job.id === id), 1),
  };
}

const base = { runId: 'r', scope: 'installation' as const, instanceId: 'n', fencingToken: 1, manual: false, attempt: 1, willRetry: false, cause: undefined, error: undefined };

describe('metrics', () => {
  it('counts events exactly, by job and outcome or reason', async () => {
    const core = fakeCore([{ id: 'a', scope: 'installation', fixedRate: '1s' }, { id: 'b', fixedRate: '1s' }]);
    const t = 1_000_000;
    let streams = { clients: 3, refused: 2, dropped: 1 };
    const m = createRunnerMetrics(core, {
      processMetrics: false,
      eventStreams: () => streams,
      successDeadlines: async () => [{ jobId: 'a', dueBy: t + 30_000 }, { jobId: 'b', dueBy: null }],
      executorFigures: async () => [{ executor: 'io', queued: 7, active: 2 }],
    });
    core.emitter.emit('runStarted', { ...base, jobId: 'a', scheduledAt: t, startedAt: t + 250, lagMs: 250 });
    core.emitter.emit('runStarted', { ...base, jobId: 'a', scheduledAt: t, startedAt: t, lagMs: 0, manual: true });
    for (const outcome of ['succeeded', 'succeeded', 'failed', 'lockLost'] as const) {
      core.emitter.emit('runEnded', { ...base, jobId: 'a', scheduledAt: t, startedAt: t, lagMs: 0, outcome, endedAt: t + 1500, durationMs: 1500 });
    }
    core.emitter.emit('skipped', { jobId: 'a', scope: 'installation', instanceId: 'n', reason: 'claimed', scheduledAt: t, at: t, recorded: true });
    core.emitter.emit('skipped', { jobId: 'b', scope: 'instance', instanceId: 'n', reason: 'overrun', scheduledAt: t, at: t, recorded: false });
    core.emitter.emit('missed', { jobId: 'a', count: 4, afterTick: 0, beforeTick: t });
    const task = { executor: 'io', kind: 'loop' as const, task: 'fetch', taskId: 'x', instanceId: 'n', attempt: 1, error: undefined, cause: undefined, willRetry: false };
    core.emitter.emit('taskEnded', { ...task, outcome: 'succeeded', durationMs: 200 });
    core.emitter.emit('taskEnded', { ...task, outcome: 'timedOut', durationMs: 3_000 });
    const s = samples(await m.registry.metrics());
    assert.equal(s.get('leasehold_tasks_total{executor="io",task="fetch",outcome="succeeded"}'), 1);
    assert.equal(s.get('leasehold_tasks_total{executor="io",task="fetch",outcome="timedOut"}'), 1);
    assert.equal(s.get('leasehold_task_duration_seconds_sum{executor="io",task="fetch",outcome="timedOut"}'), 3);
    assert.equal(s.get('leasehold_task_queue_depth{executor="io"}'), 7);
    assert.equal(s.get('leasehold_tasks_active{executor="io"}'), 2);
    assert.equal(s.get('leasehold_job_success_deadline_timestamp_seconds{job="a"}'), (t + 30_000) / 1000);
    assert.equal(s.get('leasehold_job_success_deadline_timestamp_seconds{job="b"}'), undefined, 'no deadline, no series');
    assert.equal(s.get('leasehold_job_runs_total{job="a",outcome="succeeded"}'), 2);
    assert.equal(s.get('leasehold_job_runs_total{job="a",outcome="failed"}'), 1);
    assert.equal(s.get('leasehold_job_runs_total{job="a",outcome="timedOut"}'), 0, 'series exist from the start');
    assert.equal(s.get('leasehold_job_runs_total{job="b",outcome="succeeded"}'), 0);
    assert.equal(s.get('leasehold_lease_lost_total{job="a"}'), 1);
    assert.equal(s.get('leasehold_job_missed_total{job="a"}'), 4);
    assert.equal(s.get('leasehold_job_skips_total{job="a",reason="claimed"}'), 1);
    assert.equal(s.get('leasehold_job_skips_total{job="b",reason="overrun"}'), 1);
    assert.equal(s.get('leasehold_job_skips_total{job="b",reason="claimed"}'), undefined, 'instance jobs are never claimed');
    assert.equal(s.get('leasehold_job_run_duration_seconds_sum{job="a",outcome="succeeded"}'), 3);
    assert.equal(s.get('leasehold_job_run_duration_seconds_bucket{le="1",job="a",outcome="succeeded"}'), 0);
    assert.equal(s.get('leasehold_job_run_duration_seconds_bucket{le="2.5",job="a",outcome="succeeded"}'), 2);
    assert.equal(s.get('leasehold_job_start_lag_seconds_count{job="a"}'), 1, 'manual runs have no lag');
    assert.equal(s.get('leasehold_job_start_lag_seconds_sum{job="a"}'), 0.25);
    assert.equal(s.get('leasehold_job_failing_streak{job="a"}'), 2, 'failed, lockLost after the last success');
    assert.equal(s.get('leasehold_job_failing_streak{job="b"}'), 0);
    assert.equal(s.get('leasehold_job_last_success_timestamp_seconds{job="a"}'), (t + 1500) / 1000);
    assert.equal(s.get('leasehold_job_last_success_timestamp_seconds{job="b"}'), 0);
    // The event streams' figures are totals: each scrape shows them as they are, counted once.
    for (const figures of [streams, { clients: 0, refused: 5, dropped: 1 }]) {
      streams = figures;
      const e = samples(await m.registry.metrics());
      assert.equal(e.get('leasehold_events_clients'), figures.clients);
      assert.equal(e.get('leasehold_events_clients_dropped_total{reason="maxClients"}'), figures.refused);
      assert.equal(e.get('leasehold_events_clients_dropped_total{reason="slow"}'), figures.dropped);
    }
    // The interval comes from the effective schedule, which these stand-in jobs lack (see the route tests).
    for (const name of METRIC_NAMES.filter((n) => n !== 'leasehold_job_interval_seconds')) assert.ok([...s.keys()].some((k) => k.startsWith(name)), name);
    m.detach();
    core.emitter.emit('missed', { jobId: 'a', count: 1, afterTick: 0, beforeTick: t });
    assert.equal(samples(await m.registry.metrics()).get('leasehold_job_missed_total{job="a"}'), 4, 'detached');
  });

  it('the per-job gauges made at a scrape are in every scrape, and held by none between them', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `j${i}`);
    const core = fakeCore(ids.map((id) => ({ id, scope: 'installation', fixedRate: '1s' })));
    const intervals = new Map(ids.map((id, i) => [id, (i + 1) * 1_000]));
    const deadlines = ids.map((jobId, i) => ({ jobId, dueBy: 1_000_000 + i * 1_000 }));
    const m = createRunnerMetrics({ ...core, intervalOf: (id) => intervals.get(id) }, { processMetrics: false, successDeadlines: async () => deadlines });
    const held = (name: string): number => Object.keys((m.registry.getSingleMetric(name) as unknown as { hashMap: object }).hashMap).length;
    for (let scrape = 0; scrape < 3; scrape++) {
      // Two scrapes at once (two Prometheus servers) see the same series.
      const [a, b] = await Promise.all([m.registry.metrics(), m.registry.metrics()]);
      for (const text of [a, b]) {
        const s = samples(text);
        ids.forEach((id, i) => {
          assert.equal(s.get(`leasehold_job_interval_seconds{job="${id}"}`), i + 1, `scrape ${scrape}: interval of ${id}`);
          assert.equal(s.get(`leasehold_job_success_deadline_timestamp_seconds{job="${id}"}`), 1_000 + i, `scrape ${scrape}: deadline of ${id}`);
        });
      }
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(held('leasehold_job_interval_seconds'), 0, 'no interval series held between scrapes');
      assert.equal(held('leasehold_job_success_deadline_timestamp_seconds'), 0, 'no deadline series held between scrapes');
    }
    m.detach();
  });

  it('gauges: failing streak, invalid schedule, interval', async () => {
    const core = fakeCore([{ id: 'g', fixedRate: '1s' }]);
    const m = createRunnerMetrics(core, { processMetrics: false });
    const end = (outcome: 'failed' | 'timedOut' | 'interrupted' | 'succeeded') =>
      core.emitter.emit('runEnded', { ...base, jobId: 'g', scheduledAt: 0, startedAt: 0, lagMs: 0, outcome, endedAt: 1, durationMs: 1 });
    end('failed');
    end('timedOut');
    end('interrupted');
    end('failed');
    core.emitter.emit('jobState', { jobId: 'g', state: 'invalidSchedule', cause: 'x' });
    let s = samples(await m.registry.metrics());
    assert.equal(s.get('leasehold_job_failing_streak{job="g"}'), 3, 'an interruption neither breaks nor extends a streak');
    assert.equal(s.get('leasehold_job_invalid_schedule{job="g"}'), 1);
    end('succeeded');
    core.emitter.emit('jobState', { jobId: 'g', state: 'ok', cause: undefined });
    s = samples(await m.registry.metrics());
    assert.equal(s.get('leasehold_job_failing_streak{job="g"}'), 0);
    assert.equal(s.get('leasehold_job_invalid_schedule{job="g"}'), 0);
    m.detach();
  });

  it('renders its series exactly as prom-client renders the same observations, in both formats', async () => {
    const core = fakeCore([{ id: 'a.job:1', scope: 'installation', fixedRate: '1s' }, { id: 'b', fixedRate: '1s' }]);
    const m = createRunnerMetrics(core, { processMetrics: false });
    const ref = new Registry();
    const refRuns = new Counter({ name: 'leasehold_job_runs_total', help: 'x', labelNames: ['job', 'outcome'], registers: [ref] });
    const refDurations = new Histogram({ name: 'leasehold_job_run_duration_seconds', help: 'x', labelNames: ['job', 'outcome'], buckets: DURATION_BUCKETS, registers: [ref] });
    const refLag = new Histogram({ name: 'leasehold_job_start_lag_seconds', help: 'x', labelNames: ['job'], buckets: LAG_BUCKETS, registers: [ref] });
    const seen = (jobId: string, lagMs: number, durationMs: number, outcome: 'succeeded' | 'failed') => {
      core.emitter.emit('runStarted', { ...base, jobId, scheduledAt: 0, startedAt: lagMs, lagMs });
      core.emitter.emit('runEnded', { ...base, jobId, scheduledAt: 0, startedAt: lagMs, lagMs, outcome, endedAt: lagMs + durationMs, durationMs });
      refLag.observe({ job: jobId }, lagMs / 1000);
      refRuns.inc({ job: jobId, outcome });
      refDurations.observe({ job: jobId, outcome }, durationMs / 1000);
    };
    // On a bucket's bound, between bounds, past the last bound, and zero.
    for (const [lag, duration] of [[5, 10], [7, 12], [0, 0], [90_000, 4_000_000], [250, 2_500]] as const) seen('a.job:1', lag, duration, 'succeeded');
    seen('b', 1, 50, 'failed');
    const lines = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(name) && !/ 0$/.test(l)).sort();
    const text = await m.registry.metrics();
    const expected = await ref.metrics();
    for (const name of ['leasehold_job_runs_total', 'leasehold_job_run_duration_seconds', 'leasehold_job_start_lag_seconds']) {
      assert.deepEqual(lines(text, name), lines(expected, name), name);
    }
    const json = await m.registry.getMetricsAsJSON();
    const refJson = await ref.getMetricsAsJSON();
    const values = (all: typeof json, name: string) => all.find((x) => x.name === name)?.values.filter((v) => v.value !== 0).map((v) => JSON.stringify(v)).sort();
    assert.deepEqual(values(json, 'leasehold_job_run_duration_seconds'), values(refJson, 'leasehold_job_run_duration_seconds'));
    assert.equal(json.find((x) => x.name === 'leasehold_job_run_duration_seconds')?.type, 'histogram');
    m.registry.resetMetrics();
    assert.equal(samples(await m.registry.metrics()).get('leasehold_job_runs_total{job="b",outcome="failed"}'), undefined, 'reset clears the series');
    m.detach();
  });

  it('past its job limit a node folds the other jobs into job="(other)": counters add up, gauges keep what alerts need', async () => {
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const core = fakeCore(ids.map((id) => ({ id, scope: 'installation', fixedRate: '1s' })));
    const t = 1_000_000;
    const deadlines = [{ jobId: 'a', dueBy: t + 9_000 }, { jobId: 'c', dueBy: t + 5_000 }, { jobId: 'd', dueBy: t + 2_000 }, { jobId: 'e', dueBy: null }, { jobId: 'z', dueBy: t + 7_000 }];
    const m = createRunnerMetrics({ ...core, intervalOf: () => 60_000 }, { processMetrics: false, jobLimit: 2, successDeadlines: async () => deadlines });
    const run = (jobId: string, outcome: 'succeeded' | 'failed', durationMs: number) => {
      core.emitter.emit('runStarted', { ...base, jobId, scheduledAt: t, startedAt: t + 100, lagMs: 100 });
      core.emitter.emit('runEnded', { ...base, jobId, scheduledAt: t, startedAt: t, lagMs: 0, outcome, endedAt: t + durationMs, durationMs });
    };
    run('a', 'succeeded', 1_000);
    run('c', 'succeeded', 2_000);
    run('d', 'failed', 3_000);
    run('d', 'failed', 3_000);
    run('e', 'failed', 500);
    core.emitter.emit('skipped', { jobId: 'e', scope: 'installation', instanceId: 'n', reason: 'claimed', scheduledAt: t, at: t, recorded: true });
    core.emitter.emit('missed', { jobId: 'c', count: 3, afterTick: 0, beforeTick: t });
    core.emitter.emit('jobState', { jobId: 'd', state: 'invalidSchedule', cause: 'x' });
    const text = await m.registry.metrics();
    let s = samples(text);
    const jobsNamed = jobsNamedIn(text);
    assert.deepEqual([...jobsNamed].sort(), ['(other)', 'a', 'b'], 'the first two jobs registered have series of their own, the rest one series');
    assert.equal(s.get('leasehold_job_runs_total{job="a",outcome="succeeded"}'), 1);
    assert.equal(s.get('leasehold_job_runs_total{job="b",outcome="succeeded"}'), 0, 'zero series for the jobs with their own');
    assert.equal(s.get('leasehold_job_runs_total{job="(other)",outcome="succeeded"}'), 1);
    assert.equal(s.get('leasehold_job_runs_total{job="(other)",outcome="failed"}'), 3);
    assert.equal(s.get('leasehold_job_runs_total{job="(other)",outcome="timedOut"}'), 0, 'the folded series exist from the first job folded');
    assert.equal(s.get('leasehold_job_run_duration_seconds_count{job="(other)",outcome="failed"}'), 3);
    assert.equal(s.get('leasehold_job_run_duration_seconds_sum{job="(other)",outcome="failed"}'), 6.5);
    assert.equal(s.get('leasehold_job_start_lag_seconds_count{job="(other)"}'), 4);
    assert.equal(s.get('leasehold_job_skips_total{job="(other)",reason="claimed"}'), 1);
    assert.equal(s.get('leasehold_job_missed_total{job="(other)"}'), 3);
    assert.equal(s.get('leasehold_job_failing_streak{job="(other)"}'), 2, 'the longest streak among them (d: 2, e: 1)');
    assert.equal(s.get('leasehold_job_invalid_schedule{job="(other)"}'), 1, 'one of them is invalid');
    assert.equal(s.get('leasehold_job_success_deadline_timestamp_seconds{job="a"}'), (t + 9_000) / 1000);
    assert.equal(s.get('leasehold_job_success_deadline_timestamp_seconds{job="(other)"}'), (t + 2_000) / 1000, 'the earliest deadline among them, so the alert on it fires for the first overdue');
    assert.equal(s.get('leasehold_job_interval_seconds{job="a"}'), 60);
    assert.equal(s.get('leasehold_job_interval_seconds{job="(other)"}'), undefined, 'an interval of many jobs means nothing');
    assert.equal(s.get('leasehold_job_last_success_timestamp_seconds{job="(other)"}'), undefined, 'nor does a last success of many');
    // d recovers: its streak ends and its schedule is valid again; e's streak is the longest left.
    run('d', 'succeeded', 100);
    core.emitter.emit('jobState', { jobId: 'd', state: 'ok', cause: undefined });
    s = samples(await m.registry.metrics());
    assert.equal(s.get('leasehold_job_failing_streak{job="(other)"}'), 1);
    assert.equal(s.get('leasehold_job_invalid_schedule{job="(other)"}'), 0);
    m.detach();
  });

  it('the folded series exist from the first job folded, also when it is a job of another node met in the status', async () => {
    const core = fakeCore([{ id: 'a', scope: 'installation', fixedRate: '1s' }]);
    const m = createRunnerMetrics(core, { processMetrics: false, jobLimit: 1, successDeadlines: async () => [{ jobId: 'a', dueBy: 5_000 }, { jobId: 'elsewhere', dueBy: 3_000 }] });
    const s = samples(await m.registry.metrics());
    assert.equal(s.get('leasehold_job_success_deadline_timestamp_seconds{job="(other)"}'), 3);
    const again = samples(await m.registry.metrics());
    assert.equal(again.get('leasehold_job_runs_total{job="(other)",outcome="failed"}'), 0);
    assert.equal(again.get('leasehold_job_failing_streak{job="(other)"}'), 0);
    m.detach();
  });

  it('a job of another node met in the status takes no place: a job the node adds later still gets series of its own', async () => {
    const core = fakeCore([{ id: 'a', scope: 'installation', fixedRate: '1s' }]);
    const m = createRunnerMetrics(core, { processMetrics: false, jobLimit: 2, successDeadlines: async () => [{ jobId: 'a', dueBy: 5_000 }, { jobId: 'elsewhere', dueBy: 3_000 }] });
    const first = samples(await m.registry.metrics());
    assert.equal(first.get('leasehold_job_success_deadline_timestamp_seconds{job="elsewhere"}'), 3, 'a free place shows its deadline under its id');
    m.addJob('b', 'installation');
    core.emitter.emit('runEnded', { ...base, jobId: 'b', scheduledAt: 0, startedAt: 0, lagMs: 0, outcome: 'succeeded', endedAt: 1, durationMs: 1 });
    const text = await m.registry.metrics();
    assert.equal(samples(text).get('leasehold_job_runs_total{job="b",outcome="succeeded"}'), 1);
    assert.equal(samples(text).get('leasehold_job_success_deadline_timestamp_seconds{job="(other)"}'), 3, 'with no place left, the other node\'s job is folded');
    assert.deepEqual([...jobsNamedIn(text)].sort(), ['(other)', 'a', 'b']);
    m.detach();
  });

  it('a job removed gives back its place and its series: a node whose jobs come and go stays within its limit', async () => {
    const core = fakeCore([{ id: 'a', scope: 'installation', fixedRate: '1s' }, { id: 'b', scope: 'installation', fixedRate: '1s' }]);
    const m = createRunnerMetrics(core, { processMetrics: false, jobLimit: 2 });
    const end = (jobId: string, outcome: 'succeeded' | 'failed') => core.emitter.emit('runEnded', { ...base, jobId, scheduledAt: 0, startedAt: 0, lagMs: 0, outcome, endedAt: 1, durationMs: 1 });
    end('b', 'failed');
    core.emitter.emit('jobRemoved', { jobId: 'b' });
    m.addJob('c', 'installation');
    end('c', 'succeeded');
    const text = await m.registry.metrics();
    assert.deepEqual([...jobsNamedIn(text)].sort(), ['a', 'c'], 'b is gone and c has its place');
    assert.equal(samples(text).get('leasehold_job_runs_total{job="c",outcome="succeeded"}'), 1);
    m.detach();
  });

  it('a run of a job removed while it ran counts in job="(other)" when it ends, and takes no place back', async () => {
    const core = fakeCore([{ id: 'a', scope: 'installation', fixedRate: '1s' }, { id: 'b', scope: 'installation', fixedRate: '1s' }]);
    const m = createRunnerMetrics(core, { processMetrics: false, jobLimit: 2 });
    core.unregister('b');
    core.emitter.emit('jobRemoved', { jobId: 'b' });
    core.emitter.emit('runEnded', { ...base, jobId: 'b', scheduledAt: 0, startedAt: 0, lagMs: 0, outcome: 'failed', endedAt: 1, durationMs: 1 });
    m.addJob('c', 'installation');
    const text = await m.registry.metrics();
    assert.equal(samples(text).get('leasehold_job_runs_total{job="(other)",outcome="failed"}'), 1, 'the run is counted');
    assert.equal(samples(text).get('leasehold_job_failing_streak{job="(other)"}'), 0, 'a job gone keeps no streak');
    assert.deepEqual([...jobsNamedIn(text)].sort(), ['(other)', 'a', 'c'], 'b is gone for good and c has its place');
    m.detach();
  });

  it('a scrape stays bounded however many jobs ran on the node: 1,000 jobs with their own series by default', async () => {
    const ids = Array.from({ length: 1_500 }, (_, i) => `j${i}`);
    const core = fakeCore(ids.map((id) => ({ id, scope: 'installation', fixedRate: '1s' })));
    const m = createRunnerMetrics(core, { processMetrics: false });
    for (const jobId of ids) {
      core.emitter.emit('runStarted', { ...base, jobId, scheduledAt: 0, startedAt: 5, lagMs: 5 });
      core.emitter.emit('runEnded', { ...base, jobId, scheduledAt: 0, startedAt: 5, lagMs: 5, outcome: 'succeeded', endedAt: 10, durationMs: 5 });
    }
    const text = await m.registry.metrics();
    const s = samples(text);
    assert.equal(jobsNamedIn(text).size, 1_001);
    assert.equal(s.get('leasehold_job_runs_total{job="j999",outcome="succeeded"}'), 1);
    assert.equal(s.get('leasehold_job_runs_total{job="j1000",outcome="succeeded"}'), undefined);
    assert.equal(s.get('leasehold_job_runs_total{job="(other)",outcome="succeeded"}'), 500);
    m.detach();
  });

  it('a job limit that is not a whole number from 0 to 1,000,000 is refused, naming the option', () => {
    for (const jobLimit of [-1, 1.5, Number.NaN, 1_000_001]) {
      assert.throws(
        () => createRunnerMetrics(fakeCore([]), { processMetrics: false, jobLimit }),
        (err: unknown) => err instanceof LeaseholdError && err.code === ErrorCodes.invalidConfig && /metricsJobLimit/.test(err.message),
        String(jobLimit),
      );
    }
  });

  it('one registry per runner; the process metrics are shared, not collected twice', async () => {
    const one = createRunnerMetrics(fakeCore([{ id: 'x', fixedRate: '1s' }]));
    const two = createRunnerMetrics(fakeCore([{ id: 'y', fixedRate: '1s' }]));
    const a = samples(await one.registry.metrics());
    const b = samples(await two.registry.metrics());
    assert.ok(a.has('leasehold_job_runs_total{job="x",outcome="succeeded"}'));
    assert.ok(!a.has('leasehold_job_runs_total{job="y",outcome="succeeded"}'));
    assert.ok(b.has('leasehold_job_runs_total{job="y",outcome="succeeded"}'));
    assert.ok(a.has('process_cpu_user_seconds_total') && b.has('process_cpu_user_seconds_total'));
    assert.match(one.registry.contentType, /^text\/plain/);
    one.detach();
    two.detach();
  });
});

describe('the metrics guide', () => {
  it('lists every leasehold_ metric a node serves, with its type', async () => {
    const guide = readFileSync(new URL('../docs/guide/metrics.md', import.meta.url), 'utf8');
    const rows = new Map([...guide.matchAll(/^\| `(leasehold_\w+)` \| (\w+) \|/gm)].map((m) => [m[1] ?? '', m[2]]));
    const m = createRunnerMetrics(fakeCore([{ id: 'a', scope: 'installation', fixedRate: '1s' }]), {
      processMetrics: false,
      eventStreams: () => ({ clients: 0, refused: 0, dropped: 0 }),
      successDeadlines: async () => [],
      executorFigures: async () => [],
      unhandled: () => ({ rejection: 0, exception: 0 }),
      authFailures: () => new Map(),
      statsBatchesDropped: () => new Map(),
    });
    const served = (await m.registry.getMetricsAsJSON()).filter((x) => x.name.startsWith('leasehold_'));
    assert.ok(served.length >= METRIC_NAMES.length, `${served.length} metrics served`);
    for (const metric of served) {
      assert.ok(rows.has(metric.name), `${metric.name} is in docs/guide/metrics.md's table`);
      assert.equal(rows.get(metric.name), metric.type, `${metric.name}'s type`);
    }
    m.detach();
  });
});
