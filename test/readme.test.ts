/**
 * The README is the front door: at most 250 lines, with what leasehold is, how to install it,
 * a first job in under 20 lines, how to see it run, the two commands of the repository (the test
 * command the one CI runs), the versioning policy, and links to the docs that document the Redis
 * key layout and the HTTP API. test/docs-links.test.ts checks that its links resolve, and
 * test/docs-code.test.ts that its code compiles and its jobs module loads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helpers/node.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const shell = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].flatMap((m) => (m[1] ?? '').split('\n')).map((l) => l.replace(/\s+#.*$/, '').trim());

test('the README is at most 250 lines', () => {
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= 250, `README.md has ${lines} lines`);
});

test('it installs leasehold and shows a first job in under 20 lines, run with leasehold start', () => {
  // Until leasehold is on the npm registry: the tarball of a clone, of this version.
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  assert.ok(shell.some((l) => l.endsWith('npm ci && npm pack')), 'it builds the tarball in a clone');
  assert.ok(shell.some((l) => l.endsWith(`npm install ../leasehold/leasehold-${version}.tgz`)), `it installs leasehold-${version}.tgz`);
  assert.match(readme, /`npm install leasehold`/, 'it says what installs leasehold once it is published');
  const jobs = /^```ts\n(\/\/ jobs\.ts\n[\s\S]*?)^```$/m.exec(readme)?.[1];
  assert.ok(jobs, 'a ```ts block opens with // jobs.ts');
  assert.ok(jobs.split('\n').filter((l) => l.trim() !== '').length < 20, `the first job takes ${jobs.split('\n').length} lines`);
  assert.ok(shell.includes('npx leasehold start --jobs jobs.ts --private-redis'));
  assert.match(readme, /http:\/\/localhost:3000\/manage\/ui/, 'it says where the status page is');
});

test('it gives the commands to run and to test the repository, and CI runs that test command', () => {
  assert.ok(shell.includes('npm start'), 'npm start');
  assert.ok(shell.includes('npm test'), 'npm test');
  const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
  assert.match(ci, /^npm test\b/m, '.ci/run runs npm test');
});

test('it links the docs of the Redis key layout and the HTTP API, and states the versioning policy', () => {
  assert.match(readme, /\]\(docs\/reference\/redis-keys\.md\)/);
  assert.match(readme, /\]\(docs\/reference\/http-api\.md\)/);
  assert.match(readme, /^## Versioning$/m);
  for (const part of ['public API', 'Redis key layout', 'HTTP API', 'metric names', 'CLI']) assert.ok(readme.includes(part), `the versioning policy names the ${part}`);
});
