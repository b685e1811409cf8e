/**
 * The benchmark harness keeps working: S1 in its quick mode, shortened further (6 s), for every
 * system; the results have the documented shape and leasehold runs no tick twice. S5 on two
 * nodes spreads the runs over both, for leasehold and node-cron; the measured window lies
 * between ticks. S6, a few hundred tasks per comparison, measures every side and judges each
 * target.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, writeResults, type BenchResults } from '../bench/harness.js';
import { readSettings } from '../bench/scenarios.js';
import { formatTable } from '../bench/table.js';
import { checkTargets, formatTargets } from '../bench/targets.js';
import { formatS6, readS6Options, runS6 } from '../bench/s6.js';
import { scaleOutRows } from '../bench/scaleout.js';
import { measuredWindow, type TimedFigures } from '../bench/timed.js';
import { analyzeRuns, type RunRecord } from '../bench/analyze.js';

// S1 runs 6 s per system: once the processes are up (2 to 3 s), a window of two or three whole
// periods, 40 to 60 runs each, decides the shape of the figures; the figures themselves are the
// benchmark's to measure, over 60 s (15 s quick).
test('bench: S1 quick, 6 s per system, writes figures for leasehold and every peer', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-test-'));
  try {
    const outFile = join(dir, 'results.json');
    const settings = readSettings({ BENCH_QUICK: '1', BENCH_SCENARIOS: 'S1', BENCH_DURATION_S: '6' }, outFile);
    const results = await runBench(settings, () => undefined);
    await writeResults(outFile, results);
    const written = JSON.parse(readFileSync(outFile, 'utf8')) as BenchResults;
    assert.equal(written.scenarios.length, 1);
    const s1 = written.scenarios[0];
    assert.equal(s1?.name, 'S1');
    for (const system of ['leasehold', 'bullmq', 'croner-redlock', 'node-cron'] as const) {
      const f = s1?.systems[system] as TimedFigures | { error: string } | undefined;
      assert.ok(f !== undefined && !('error' in f), `${system}: ${JSON.stringify(f)}`);
      assert.ok(f.runs > 0, `${system} ran nothing`);
      for (const key of ['duplicates', 'misses', 'redisCommandsPerRun', 'redisRoundTripsPerRun', 'redisCpuMsPerRun', 'cpuMsPerRun', 'rssMb'] as const) {
        assert.equal(typeof f[key], 'number', `${system}.${key}`);
      }
      assert.ok(f.latenessMs.p50 <= f.latenessMs.p99 && f.latenessMs.p99 <= f.latenessMs.max, `${system} lateness`);
      assert.ok(f.redisRoundTripsPerRun > 0, `${system}: no client command counted`);
    }
    const leasehold = s1?.systems.leasehold as TimedFigures;
    assert.equal(leasehold.duplicates, 0, 'leasehold ran a tick twice');
    // node-cron's coordinator sends one SET NX PX per process and fire: the losers' claims are counted.
    const nodeCron = s1?.systems['node-cron'] as TimedFigures;
    assert.ok((nodeCron.sentByName['set'] ?? 0) >= 1, `node-cron sent no SET: ${JSON.stringify(nodeCron.sentByName)}`);
    assert.ok((nodeCron.perRun['notElected'] ?? 0) > 0, `no node-cron process lost a fire: ${JSON.stringify(nodeCron.perRun)}`);
    const table = formatTable(written);
    assert.match(table, /S1\s+leasehold/);
    assert.match(table, /S1\s+node-cron/);
    // A window of a few ticks is shown tick by tick too, every run of its ticks in one of them.
    const byTick = leasehold.byTick ?? [];
    assert.equal(byTick.reduce((n, t) => n + t.runs, 0), leasehold.expectedTicks - leasehold.misses + leasehold.extraRuns, JSON.stringify(byTick));
    assert.match(table, /late by tick of the window, p50\/max ms\n[-\s]+\nS1\s+leasehold\s+[\d.]+\/[\d.]+/);
    assert.match(formatTargets(checkTargets(written)), /S1: leasehold leads node-cron on every figure/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bench: a quick run writes its own results file, never the committed full-run one', () => {
  assert.equal(readSettings({ BENCH_QUICK: '1' }, '/x/results/latest.json').outFile, '/x/results/latest.quick.json');
  assert.equal(readSettings({}, '/x/results/latest.json').outFile, '/x/results/latest.json');
  assert.equal(readSettings({ BENCH_QUICK: '1', BENCH_OUT: '/tmp/o.json' }, '/x/results/latest.json').outFile, '/tmp/o.json');
});

test('bench: a window opens and closes half a period after a tick and spans at least its shortest length', () => {
  // Ready at 12.3 s into a 10 s schedule: the window opens at 15 s, five whole periods before 70 s.
  assert.deepEqual(measuredWindow(12_300, 67_500, 10_000), { from: 15_000, to: 65_000 });
  // A start too slow for one period still gets one (the run is lengthened to hold it).
  assert.deepEqual(measuredWindow(25_100, 27_500, 10_000), { from: 25_000 + 10_000, to: 45_000 });
  assert.deepEqual(measuredWindow(1_000, 2_000, 1_000, 5_000), { from: 1_500, to: 6_500 });
});

test('bench: lateness is judged over the whole window and, apart, over its ticks from the 30th second on', () => {
  // Ten jobs every 10 s over 70 s: the first tick 200 ms late (a node's first ticks run cold), the others 10 ms.
  const from = 1_000_005_000;
  const runs: RunRecord[] = [];
  for (let k = 0; k < 7; k++) {
    const tick = from + 5_000 + k * 10_000;
    for (let job = 0; job < 10; job++) runs.push({ job, tick, start: tick + (k === 0 ? 200 : 10), worker: 0 });
  }
  const long = analyzeRuns({ runs, jobs: 10, periodMs: 10_000, from, to: from + 70_000 });
  assert.equal(long.latenessMs.p99, 200);
  assert.equal(long.steadyLatenessMs.p99, 10);
  // Tick by tick, from the window's opening: the cold first tick stands out.
  assert.deepEqual(long.byTick.map((t) => [t.dueMs, t.runs, t.p50, t.max]), [[5_000, 10, 200, 200], ...[1, 2, 3, 4, 5, 6].map((k) => [5_000 + k * 10_000, 10, 10, 10])]);
  // A window no longer than STEADY_AFTER_MS is judged whole both ways.
  const short = analyzeRuns({ runs, jobs: 10, periodMs: 10_000, from, to: from + 30_000 });
  assert.equal(short.steadyLatenessMs.p99, 200);
});

test('bench: S5 runs one window per size of the cluster and reports each node share', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-test-'));
  try {
    assert.throws(() => readSettings({ BENCH_S5_NODES: '3,x' }, '/x/latest.json'), /BENCH_S5_NODES: "x" is not a number of processes/);
    const settings = readSettings({ BENCH_QUICK: '1', BENCH_SCENARIOS: 'S5', BENCH_SYSTEMS: 'leasehold,node-cron', BENCH_S5_NODES: '2', BENCH_DURATION_S: '2' }, join(dir, 'r.json'));
    const results = await runBench(settings, () => undefined);
    const [row, peer, ...more] = scaleOutRows(results.scenarios);
    assert.equal(more.length, 0);
    assert.ok(row !== undefined && row.system === 'leasehold' && row.nodes === 2, JSON.stringify(row));
    assert.ok(row.runs >= 200, `${row.runs} runs in a 2 s window of 100 jobs a second`);
    assert.equal(row.duplicates, 0);
    assert.ok(row.shareMin > 0, 'a node ran nothing: the ticks are not spread');
    assert.ok(peer !== undefined && peer.system === 'node-cron' && peer.nodes === 2 && peer.runs >= 200, JSON.stringify(peer));
    assert.match(formatTable(results), /S5\s+leasehold\s+2/);
    assert.match(formatTable(results), /S5\s+node-cron\s+2/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bench: S6 runs each executor against what users install and checks the targets', { timeout: 120_000 }, async () => {
  assert.throws(() => readS6Options({ BENCH_S6_KINDS: 'loop,x' }), /BENCH_S6_KINDS: unknown "x"/);
  assert.equal(readS6Options({ BENCH_QUICK: '1' }).rounds, 3);
  const s6 = await runS6({ tasks: 300, cpuTasks: 40, rounds: 1, kinds: ['loop', 'worker', 'queue'] }, () => undefined);
  const targets = s6.comparisons.flatMap((c) => c.checks.map((k) => [`${c.kind}, ${c.task} / ${k.peer}`, k.target] as const));
  assert.deepEqual(Object.fromEntries(targets), {
    'loop, no-op (await null; n * n) / p-queue': 1,
    'loop, no-op (await null; n * n) / p-queue with a 5 min timeout': 1,
    'loop, no-op (await null; n * n) / p-limit': null,
    'loop, no-op (await null; n * n) / plain promise pool': null,
    'loop, no-op (await null; n * n) / submission API alone': null,
    'worker, no-op (n * n) / piscina': 0.7,
    'worker, 1 ms of CPU / piscina': 0.9,
    'queue, no-op (n * n) / BullMQ': 0.9,
  });
  for (const c of s6.comparisons) {
    const own = c.sides['leasehold'];
    assert.ok(own !== undefined && own.tasksPerSecond > 0 && own.rounds.length === 1, `${c.kind} ${c.task}: ${JSON.stringify(own)}`);
    for (const k of c.checks) {
      const theirs = c.sides[k.peer];
      assert.ok(theirs !== undefined && theirs.tasksPerSecond > 0, `${c.kind} ${k.peer}: ${JSON.stringify(theirs)}`);
      assert.ok(Math.abs(k.ratio - own.tasksPerSecond / theirs.tasksPerSecond) < 0.01 + 0.01 * k.ratio, `${k.peer}: ratio ${k.ratio}`);
      assert.equal(k.met === null, k.target === null, `${k.peer}: a target is judged, a reference is not`);
    }
  }
  const queue = s6.comparisons.find((c) => c.kind === 'queue');
  assert.ok((queue?.sides['leasehold']?.redisCommandsPerTask ?? 0) > 1 && (queue?.sides['BullMQ']?.redisCommandsPerTask ?? 0) > 1, JSON.stringify(queue?.sides));
  assert.equal(queue?.checks[0]?.commands?.within, 1.05);
  const table = formatS6(s6);
  assert.equal(table.match(/\| (met|NOT MET) \(>= /g)?.length, 5, table);
  assert.equal(table.match(/\| reference \|/g)?.length, 3, table);
});
