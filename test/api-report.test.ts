/**
 * The public API is deliberate: `docs/api/leasehold.api.md` (API Extractor's report of
 * `dist/index.d.ts`) is checked in, and this test fails when the API changes without it being
 * updated (`npm run api` updates it), when an exported type refers to one that is not
 * exported, or when an export or a member of one has no TSDoc.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

test('the API report in docs/api matches the built declarations, with every export documented', () => {
  // `npm test` builds dist/ first (pretest).
  const run = spawnSync(process.execPath, ['node_modules/@microsoft/api-extractor/bin/api-extractor', 'run'], { cwd: root, encoding: 'utf8' });
  // eslint-disable-next-line no-control-regex -- strips the colours of its output
  const out = `${run.stdout}${run.stderr}`.replace(/\u001b\[[0-9;]*m/g, '');
  assert.equal(run.status, 0, `api-extractor failed; run \`npm run api\` and commit docs/api/leasehold.api.md if the change is deliberate:\n${out}`);
  assert.match(out, /API Extractor completed successfully/);
});
