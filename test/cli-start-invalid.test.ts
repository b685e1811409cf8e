/**
 * `leasehold start` names every invalid job, as `leasehold check` does, and starts nothing.
 * Runs the built CLI (`npm run build` first).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runLeasehold } from './helpers/node.js';

const MODULE = 'test/fixtures/jobs-several-invalid.mjs';

test('start lists every invalid job, the same as check, and starts no node', async () => {
  const [start, check] = await Promise.all([runLeasehold(['start', '--jobs', MODULE, '--port', '0']), runLeasehold(['check', MODULE])]);
  assert.equal(check.code, 1, check.stderr);
  const problems = check.stderr.trimEnd().split('\n').map((l) => l.replace(`${MODULE}: `, ''));
  assert.equal(problems.length, 4, check.stderr);
  assert.notEqual(start.code, 0, start.stderr);
  assert.equal(start.stderr, problems.map((p) => `leasehold: ${p}\n`).join(''));
  for (const job of ['bad-hour', 'typo', 'fine', 'no-schedule']) assert.match(start.stderr, new RegExp(`^leasehold: job "${job}": field `, 'm'), job);
  assert.doesNotMatch(start.stdout, /runner started/);
});
