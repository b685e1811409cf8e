// Runs the test files, two at a time, each in its own process, with the spec reporter.
//
//   npm test                            every test/**/*.test.ts
//   npm test -- test/lease.test.ts ...  those files only
//
// No process is forced to exit when its tests end: `--test-force-exit`, on the runner or on the
// files, loses reports still on their way (Node 20 and 22 printed 1,575 to 1,981 of 2,000 trivial
// tests, and once exited 1 with none failed: nodejs/node#64833). A file whose process stays open
// after its tests is ended by scripts/test-exit.mjs, 30 s later, naming what held it.
// Run it under tsx (`tsx scripts/test.mjs`): the files' processes inherit its loader.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

const files = process.argv.length > 2
  ? process.argv.slice(2)
  : readdirSync('test', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts')).map((f) => join('test', f)).sort();
// The mark is for the files' processes; NODE_OPTIONS reaches them (and what they start).
process.env['LEASEHOLD_TEST_FILE'] = '1';
process.env['NODE_OPTIONS'] = `${process.env['NODE_OPTIONS'] ?? ''} --import ${new URL('./test-exit.mjs', import.meta.url).href}`.trim();
// A file (on Node 20 and 22; a test, on Node 24) still running after 10 minutes fails, named, and
// the others go on: a test waiting for something that never comes (a node deaf to its SIGTERM
// held one for nine minutes once) would otherwise hold the whole run until CI's own limit, with
// no report of which. The longest file, the fault suite's, takes about 100 s alone.
const FILE_TIMEOUT_MS = 10 * 60_000;
const stream = run({ files, concurrency: 2, timeout: FILE_TIMEOUT_MS });
stream.on('test:fail', () => {
  process.exitCode = 1;
});
// The time of each file's top-level tests, summed: the slowest are named at the end, which is
// what to make cheaper when the run grows past the 10 minutes it is kept under.
const byFile = new Map();
for (const event of ['test:pass', 'test:fail']) {
  stream.on(event, (data) => {
    if (data.nesting === 0 && data.file) byFile.set(data.file, (byFile.get(data.file) ?? 0) + (data.details?.duration_ms ?? 0));
  });
}
process.on('beforeExit', () => {
  if (byFile.size < 10) return;
  const slowest = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 10);
  const root = `${process.cwd()}/`;
  console.log(`the slowest test files (their top-level tests' time, s): ${slowest.map(([file, ms]) => `${file.replace(root, '')} ${(ms / 1000).toFixed(0)}`).join(', ')}`);
});
stream.compose(new spec()).pipe(process.stdout);
