/**
 * The benchmark harness keeps working: S1 in its quick mode, shortened further, for every
 * system; the results have the documented shape and leasehold runs no tick twice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench, writeResults, type BenchResults } from '../bench/harness.js';
import { readSettings } from '../bench/scenarios.js';
import { formatTable } from '../bench/table.js';
import type { TimedFigures } from '../bench/timed.js';

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
