/**
 * `npm run chaos [-- <name filter>...]`: runs the fault scenarios against real nodes (the
 * built CLI, `dist/`) and a real redis-server, prints the table and every check, and exits
 * non-zero when a scenario fails. `CHAOS_QUICK=1` shortens them (as `npm test` does).
 * @module
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../test/helpers/node.js';
import { details, table } from './report.js';
import { runScenarios, select } from './suite.js';

/** Newest modification time of the files under `dir`, ms. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

const built = join(ROOT, 'dist', 'cli', 'main.js');
if (!existsSync(built)) {
  process.stderr.write('dist/ is missing: run `npm run build` first (the scenarios run the built CLI)\n');
  process.exit(2);
}
if (newest(join(ROOT, 'src')) > statSync(built).mtimeMs) {
  process.stderr.write('warning: src/ is newer than dist/; run `npm run build` to test the current code\n');
}
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
