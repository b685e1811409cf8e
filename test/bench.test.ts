/**
 * The benchmark harness keeps working: S1 in its quick mode, shortened further, for every
 * system; the results have the documented shape and leasehold runs no tick twice. S5 on two
 * nodes spreads the runs over both; the measured window lies between ticks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, writeResults, type BenchResults } from '../bench/harness.js';
import { readSettings } from '../bench/scenarios.js';
import { formatTable } from '../bench/table.js';
import { scaleOutRows } from '../bench/scaleout.js';
import { measuredWindow, type TimedFigures } from '../bench/timed.js';

test('bench: S1 quick, 8 s per system, writes figures for all three systems', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-test-'));
  try {
    const outFile = join(dir, 'results.json');
    const settings = readSettings({ BENCH_QUICK: '1', BENCH_SCENARIOS: 'S1', BENCH_DURATION_S: '8' }, outFile);
    const results = await runBench(settings, () => undefined);
    await writeResults(outFile, results);
    const written = JSON.parse(readFileSync(outFile, 'utf8')) as BenchResults;
    assert.equal(written.scenarios.length, 1);
    const s1 = written.scenarios[0];
    assert.equal(s1?.name, 'S1');
    for (const system of ['leasehold', 'bullmq', 'croner-redlock'] as const) {
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
    assert.match(formatTable(written), /S1\s+leasehold/);
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

test('bench: S5 runs one window per size of the cluster and reports each node share', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-test-'));
  try {
    assert.throws(() => readSettings({ BENCH_S5_NODES: '3,x' }, '/x/latest.json'), /BENCH_S5_NODES: "x" is not a number of processes/);
    const settings = readSettings({ BENCH_QUICK: '1', BENCH_SCENARIOS: 'S5', BENCH_SYSTEMS: 'leasehold', BENCH_S5_NODES: '2', BENCH_DURATION_S: '2' }, join(dir, 'r.json'));
    const results = await runBench(settings, () => undefined);
    const [row, ...more] = scaleOutRows(results.scenarios);
    assert.equal(more.length, 0);
    assert.ok(row !== undefined && row.system === 'leasehold' && row.nodes === 2, JSON.stringify(row));
    assert.ok(row.runs >= 200, `${row.runs} runs in a 2 s window of 100 jobs a second`);
    assert.equal(row.duplicates, 0);
    assert.ok(row.shareMin > 0, 'a node ran nothing: the ticks are not spread');
    assert.match(formatTable(results), /S5\s+leasehold\s+2/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
