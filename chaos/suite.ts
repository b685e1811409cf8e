/**
 * Runs fault scenarios one after the other, each on its own Redis and nodes, and turns
 * each into a result row (a scenario that breaks is a row with its error, never a crash).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScenarioResult } from './report.js';
import type { Scenario } from './scenario.js';
import { loopBlock } from './scenarios/loop-block.js';
import { nodeFreeze } from './scenarios/node-freeze.js';
import { nodeKill } from './scenarios/node-kill.js';
import { redisAbsent } from './scenarios/redis-absent.js';
import { redisRestart } from './scenarios/redis-restart.js';
import { redisStall } from './scenarios/redis-stall.js';
import { redisFrozenStop } from './scenarios/redis-frozen-stop.js';
import { rollingRestart } from './scenarios/rolling-restart.js';
import { stopClaim } from './scenarios/stop-claim.js';
import { clockStep } from './scenarios/clock-step.js';
import { unhandled } from './scenarios/unhandled.js';
import { workerDeploy } from './scenarios/worker-deploy.js';
import { corruptKeys } from './scenarios/corrupt-keys.js';
import { corruptSettings } from './scenarios/corrupt-settings.js';
import { slowEvents } from './scenarios/slow-events.js';

/** Every scenario, in the order they run. */
export const SCENARIOS: readonly Scenario[] = [redisAbsent, redisStall, redisRestart, nodeKill, nodeFreeze, loopBlock, rollingRestart, stopClaim, clockStep, redisFrozenStop, unhandled, workerDeploy, corruptKeys, corruptSettings, slowEvents];

/** Options of {@link runScenarios}. */
export interface SuiteOptions {
  readonly quick: boolean;
  /** Run only scenarios whose name contains one of these (case-insensitive). */
  readonly only?: readonly string[];
  readonly log?: (line: string) => void;
}

/** Runs one scenario and makes its row. */
export async function runScenario(scenario: Scenario, quick: boolean, log: (line: string) => void = () => undefined): Promise<ScenarioResult> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-chaos-'));
  const t0 = Date.now();
  const base = { name: scenario.name, faults: scenario.faults(quick) };
  // A failed scenario keeps its run logs to read (so does every one with CHAOS_KEEP=1).
  let keep = process.env['CHAOS_KEEP'] === '1';
  try {
    const figures = await scenario.run({ quick, dir, log: (line) => log(`[${scenario.name}] ${line}`) });
    const passed = figures.checks.length > 0 && figures.checks.every((c) => c.ok);
    keep ||= !passed;
    return { ...base, ...figures, passed, seconds: (Date.now() - t0) / 1000 };
  } catch (err) {
    keep = true;
    const error = err instanceof Error ? err.message : String(err);
    return { ...base, expected: 0, done: 0, duplicated: 0, lostCounts: 0, missed: 0, checks: [], passed: false, seconds: (Date.now() - t0) / 1000, error };
  } finally {
    if (keep) log(`[${scenario.name}] its run logs are kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** The scenarios `only` selects (all without it). */
export function select(only: readonly string[] | undefined): Scenario[] {
  if (only === undefined || only.length === 0) return [...SCENARIOS];
  return SCENARIOS.filter((s) => only.some((o) => s.name.toLowerCase().includes(o.toLowerCase())));
}

/** Runs the selected scenarios in order. */
export async function runScenarios(opts: SuiteOptions): Promise<ScenarioResult[]> {
  const out: ScenarioResult[] = [];
  for (const scenario of select(opts.only)) {
    opts.log?.(`${scenario.name}: ${scenario.faults(opts.quick)}`);
    out.push(await runScenario(scenario, opts.quick, opts.log));
  }
  return out;
}
