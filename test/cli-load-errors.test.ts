/**
 * A jobs module that does not compile is reported with its file, line and column and the
 * offending line, for TypeScript (esbuild through tsx) and JavaScript (V8) alike, by `check`
 * and `start`. Runs the built CLI (`npm run build` first).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLeasehold } from './helpers/node.js';

const SOURCE = [
  'export default [',
  "  { id: 'fine', fixedRate: '1s', run: () => {} },",
  "  { id: 'broken', fixedRate: '1s', run: () => { work( },",
  '];',
  '',
].join('\n');
// Where the parser stops: the `}` after `work(`, 1-based.
const LINE = 3;
const COLUMN = SOURCE.split('\n')[LINE - 1]!.indexOf('}') + 1;

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-load-'));
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  for (const name of ['jobs.ts', 'jobs.mjs', 'jobs.js']) writeFileSync(join(dir, name), SOURCE);
  writeFileSync(join(dir, 'jobs.cjs'), SOURCE.replace('export default', 'module.exports ='));
  writeFileSync(join(dir, 'imports-broken.ts'), "import './lib.ts';\nexport default [];\n");
  writeFileSync(join(dir, 'lib.ts'), 'export const limit: number = ;\n');
  writeFileSync(join(dir, 'throws.mjs'), "export default [];\n\nthrow new Error('no database configured');\n");
});
after(() => rmSync(dir, { recursive: true, force: true }));

function assertLocated(stderr: string, file: string, line: number, column: number, lineText: string, what: string): void {
  const [first, source, caret] = stderr.split('\n');
  assert.match(first ?? '', new RegExp(`failed to load: ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:${line}:${column}: \\S`), `${what}: ${stderr}`);
  assert.equal(source, `  ${line} | ${lineText}`, `${what}: the offending line`);
  assert.equal(caret, `  ${' '.repeat(String(line).length)} | ${' '.repeat(column - 1)}^`, `${what}: a caret under the column`);
}

test('a syntax error in a .ts, .mjs, .js or .cjs jobs module names the file, line and column and shows the line', async () => {
  for (const name of ['jobs.ts', 'jobs.mjs', 'jobs.js', 'jobs.cjs']) {
    const file = join(dir, name);
    const r = await runLeasehold(['check', file]);
    assert.equal(r.code, 1, `${name}: ${r.stderr}`);
    assertLocated(r.stderr, file, LINE, COLUMN, SOURCE.split('\n')[LINE - 1]!, `check ${name}`);
    assert.match(r.stderr, name === 'jobs.ts' ? /: Unexpected "\}"\n/ : /: Unexpected token '\}'\n/, name);
    assert.doesNotMatch(r.stderr, /Transform failed/, name);
  }
});

test('leasehold start says where too', async () => {
  const file = join(dir, 'jobs.ts');
  const r = await runLeasehold(['start', '--jobs', file, '--port', '0']);
  assert.equal(r.code, 1, r.stderr);
  assertLocated(r.stderr, file, LINE, COLUMN, SOURCE.split('\n')[LINE - 1]!, 'start jobs.ts');
});

test('a syntax error in a module the jobs module imports names that module', async () => {
  const r = await runLeasehold(['check', join(dir, 'imports-broken.ts')]);
  assert.equal(r.code, 1, r.stderr);
  assertLocated(r.stderr, join(dir, 'lib.ts'), 1, 'export const limit: number = '.length + 1, 'export const limit: number = ;', 'check imports-broken.ts');
});

test('an error thrown while the module runs names where it was thrown', async () => {
  const file = join(dir, 'throws.mjs');
  const r = await runLeasehold(['check', file]);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stderr, `leasehold: jobs module ${file} failed to load: no database configured (at ${file}:3:7)\n`);
});
