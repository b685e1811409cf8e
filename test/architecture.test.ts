/**
 * The layers of src/: the import graph between its modules, seen the way the lint sees it
 * (scripts/eslint-layers.mjs: every form of import, each resolved to the module it lands in),
 * obeys the table in scripts/layers.mjs, and docs/architecture.md draws exactly that graph.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { forbiddenImport, importVisitors, moduleOf, targetOf } from '../scripts/eslint-layers.mjs';
import { LEAVES } from '../scripts/layers.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));

/** Every import written in a file of src/: [importing file, specifier]. */
async function imports(): Promise<Array<[string, string]>> {
  const found: Array<[string, string]> = [];
  const collect = { create: (context: { filename: string }) => importVisitors((specifier) => found.push([context.filename, specifier])) };
  const eslint = new ESLint({
    cwd: repo,
    overrideConfigFile: true,
    allowInlineConfig: false,
    overrideConfig: {
      files: ['src/**/*.{ts,mts,cts}'],
      languageOptions: { parser: tseslint.parser },
      plugins: { graph: { rules: { collect } } },
      rules: { 'graph/collect': 'error' },
    },
  });
  const results = await eslint.lintFiles(['src']);
  assert.deepEqual(results.flatMap((r) => r.messages.map((m) => `${relative(repo, r.filePath)}: ${m.message}`)), []);
  assert.ok(results.length > 100, `only ${results.length} files of src/ were read`);
  return found;
}

const found = await imports();

test('every import of a file of src/ is one the layers allow', () => {
  const wrong = found.flatMap(([file, specifier]) => {
    const why = forbiddenImport(file, specifier);
    return why === undefined ? [] : [`${relative(repo, file)}: ${why}`];
  });
  assert.deepEqual(wrong, []);
});

test('docs/architecture.md draws the import graph of src/ as it is', () => {
  const actual = new Set<string>();
  for (const [file, specifier] of found) {
    const target = targetOf(file, specifier);
    const a = moduleOf(file);
    const b = target === undefined ? undefined : moduleOf(target);
    if (a === undefined || b === undefined || a === b || LEAVES.includes(a) || LEAVES.includes(b)) continue;
    actual.add(`${a} --> ${b}`);
  }
  const doc = readFileSync(join(repo, 'docs/architecture.md'), 'utf8');
  const block = /<!-- layers:start -->([\s\S]*?)<!-- layers:end -->/.exec(doc)?.[1] ?? '';
  const drawn = new Set([...block.matchAll(/^\s+(\w+) --> (\w+)$/gm)].map((m) => `${m[1]} --> ${m[2]}`));
  const missing = [...actual].filter((e) => !drawn.has(e)).sort();
  const stale = [...drawn].filter((e) => !actual.has(e)).sort();
  assert.deepEqual({ missing, stale }, { missing: [], stale: [] }, 'the diagram between the layers:start and layers:end markers: draw what is missing, remove what is stale');
});
