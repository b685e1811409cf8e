/**
 * The fault suite (`npm run chaos`), shortened as with CHAOS_QUICK=1: each scenario against
 * real nodes and a private redis-server. A scenario passes when every one of its checks
 * holds; the message lists them all with their figures.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Checks, details, table, type ScenarioResult } from '../chaos/report.js';
import { SCENARIOS, runScenario, select } from '../chaos/suite.js';
import { secondTicks, tickCoverage } from '../chaos/scenario.js';
import type { RunLine } from '../chaos/runlog.js';

test('the table has one row per scenario and says which failed', () => {
  const c = new Checks();
  c.equal('ticks run twice', 0, 0);
  const row = (name: string, passed: boolean): ScenarioResult => ({ name, faults: 'f', expected: 3, done: passed ? 3 : 2, duplicated: 0, lostCounts: 0, missed: 0, checks: c.list, passed, seconds: 1 });
  const lines = table([row('one', true), row('two', false)]).split('\n');
  assert.equal(lines.length, 4);
  assert.match(lines[0] ?? '', /\| scenario +\| faults injected +\| runs expected \| runs done \| duplicated \| lost counts \| missed \| result \|/);
  assert.match(lines[2] ?? '', /\| one .*\| pass +\|$/);
  assert.match(lines[3] ?? '', /\| two .*\| FAIL +\|$/);
  assert.match(details([row('one', true)]), /ok {3}ticks run twice: 0 \(expected 0\)/);
  assert.equal(select(['frozen past']).length, 1);
  assert.equal(select(undefined).length, SCENARIOS.length);
});

test('tick coverage counts the ticks of a 1 s grid a job ran in the windows', () => {
  assert.deepEqual(secondTicks(1_500, 4_000), [2_000, 3_000, 4_000]);
  const start = (tick: number): RunLine => ({ ev: 'start', job: 'tick', tick, inst: 'a', token: 1, t: tick + 5 });
  const cov = tickCoverage([start(2_000), start(4_000), start(4_000)], 'tick', [{ from: 1_500, to: 4_000 }, { from: 9_000, to: 8_000 }]);
  assert.deepEqual(cov, { expected: 3, done: 2, notRun: [3_000] });
});

for (const scenario of SCENARIOS.filter((s) => s.long !== true)) {
  test(`chaos (quick): ${scenario.name}`, { timeout: 120_000 }, async () => {
    const r = await runScenario(scenario, true);
    assert.equal(r.error, undefined, `the scenario broke: ${r.error ?? ''}`);
    const failed = r.checks.filter((c) => !c.ok).map((c) => `${c.what}: ${c.detail}`);
    assert.deepEqual(failed, [], `\n${details([r])}`);
  });
}
