// Runs the test files, two at a time, each in its own process, with the spec reporter.
//
//   npm test                            every test/**/*.test.ts
//   npm test -- test/lease.test.ts ...  those files only
//
// Each file's process ends when its tests have (`--test-force-exit` in that process): a test
// that leaves a handle open costs nothing. This runner does not force its own exit: it reads
// every file's report to the end. `node --test --test-force-exit` forces both, and on Node 22
// and 24 the runner then exits with reports still unread, printing fewer tests than ran and
// sometimes failing with none failed (nodejs/node#64833). Node 20's `run()` cannot pass flags
// to the files' processes (no `execArgv`); there the runner forces its exit, which loses nothing
// on Node 20. Run it under tsx (`tsx scripts/test.mjs`): the files' processes inherit its loader.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

/** Every `*.test.ts` under `dir`, sorted. */
function testFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...testFiles(path));
    else if (entry.name.endsWith('.test.ts')) found.push(path);
  }
  return found.sort();
}

const files = process.argv.length > 2 ? process.argv.slice(2) : testFiles('test');
const major = Number(process.versions.node.split('.')[0]);
const stream = run({
  files,
  concurrency: 2,
  ...(major >= 22 ? { execArgv: ['--test-force-exit'] } : { forceExit: true }),
});
stream.on('test:fail', () => {
  process.exitCode = 1;
});
stream.compose(new spec()).pipe(process.stdout);
