/**
 * `npm run chaos [-- <name filter>...]`: runs the fault scenarios against real nodes and a
 * real redis-server, prints the table and every check, and exits non-zero when a scenario
 * fails. `CHAOS_QUICK=1` shortens them (as `npm test` does).
 * @module
 */
import { details, table } from './report.js';
import { runScenarios, select } from './suite.js';

const quick = process.env['CHAOS_QUICK'] === '1';
const only = process.argv.slice(2);
if (select(only).length === 0) {
  process.stderr.write(`no scenario matches ${only.join(' ')}\n`);
  process.exit(2);
}
const t0 = Date.now();
const results = await runScenarios({ quick, only, log: (line) => process.stderr.write(`${line}\n`) });
process.stdout.write(`\n${table(results)}\n\n${details(results)}\n\n`);
const failed = results.filter((r) => !r.passed);
process.stdout.write(`${results.length - failed.length} passed, ${failed.length} failed (${quick ? 'quick' : 'full'} run, ${Math.round((Date.now() - t0) / 1000)} s)\n`);
process.exitCode = failed.length > 0 ? 1 : 0;
