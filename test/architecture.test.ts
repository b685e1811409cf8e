/**
 * The layers of src/: the import graph between its modules obeys the table the lint is made
 * from (scripts/layers.mjs), and docs/architecture.md draws exactly that graph.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LAYERS, LEAVES, RUNNER_LEASE_FILES } from '../scripts/layers.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(repo, 'src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** A file's module: its folder under src/, or its own name at the top. */
function moduleOf(file: string): string {
  const parts = relative(src, file).split('/');
  return parts.length > 1 ? (parts[0] as string) : (parts[0] as string).replace(/\.ts$/, '');
}

/** Every import of a file of leasehold's own: [importing file, imported file]. */
function imports(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const file of tsFiles(src)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/g)) {
      out.push([file, resolve(dirname(file), m[1] as string).replace(/\.js$/, '.ts')]);
    }
  }
  return out;
}

test('every import between modules of src/ is one the layers allow', () => {
  const wrong: string[] = [];
  for (const [from, to] of imports()) {
    const a = moduleOf(from);
    const b = moduleOf(to);
    if (a === b || LEAVES.includes(b)) continue;
    const layer = (LAYERS as Record<string, { may: string[] }>)[a];
    if (LEAVES.includes(a) || !layer?.may.includes(b)) wrong.push(`${relative(repo, from)} imports ${relative(repo, to)}`);
    if (a === 'runner' && b === 'lease' && !RUNNER_LEASE_FILES.some((f) => to.endsWith(`/lease/${f}.ts`))) wrong.push(`${relative(repo, from)} reaches the Redis side of the lease: ${relative(repo, to)}`);
  }
  assert.deepEqual(wrong, []);
});

test('docs/architecture.md draws the import graph of src/ as it is', () => {
  const actual = new Set<string>();
  for (const [from, to] of imports()) {
    const a = moduleOf(from);
    const b = moduleOf(to);
    if (a !== b && !LEAVES.includes(a) && !LEAVES.includes(b)) actual.add(`${a} --> ${b}`);
  }
  const doc = readFileSync(join(repo, 'docs/architecture.md'), 'utf8');
  const block = /<!-- layers:start -->([\s\S]*?)<!-- layers:end -->/.exec(doc)?.[1] ?? '';
  const drawn = new Set([...block.matchAll(/^\s+(\w+) --> (\w+)$/gm)].map((m) => `${m[1]} --> ${m[2]}`));
  assert.deepEqual([...drawn].sort(), [...actual].sort(), 'the diagram between the layers:start and layers:end markers');
});
