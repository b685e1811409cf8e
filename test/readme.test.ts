/**
 * The README stays true to the code: the configuration table is the one rendered from the
 * config module, every environment variable the code reads is documented, and every Redis
 * key of the key module is in the key table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG, renderConfigTable } from '../src/cli/config.js';
import { KEY_TABLE, renderKeyTable } from '../src/redis/keys.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

test('the configuration table in the README is the one the code renders (run `npx tsx scripts/readme-tables.ts` to refresh it)', () => {
  const m = /<!-- config-table:start -->\n([\s\S]*?)\n<!-- config-table:end -->/.exec(readme);
  assert.ok(m, 'README has the config-table markers');
  assert.equal(m[1], renderConfigTable());
});

test('every environment variable the code reads is in the configuration table', () => {
  const documented = new Set(CONFIG.flatMap((e) => (e.env ? [e.env] : [])));
  const read = new Set<string>();
  for (const file of sources(new URL('../src', import.meta.url).pathname)) {
    for (const m of readFileSync(file, 'utf8').matchAll(/env\[['"]([A-Z][A-Z0-9_]+)['"]\]/g)) read.add(m[1] as string);
  }
  assert.ok(read.size >= 3, `found the env reads: ${[...read].join(', ')}`);
  for (const name of read) assert.ok(documented.has(name), `${name} is read by the code but not documented`);
});

test('the Redis key table in the README is the one the key module renders', () => {
  const m = /<!-- key-table:start -->\n([\s\S]*?)\n<!-- key-table:end -->/.exec(readme);
  assert.ok(m, 'README has the key-table markers');
  assert.equal(m[1], renderKeyTable());
});

test('every Redis key is in the README key table', () => {
  for (const k of KEY_TABLE) {
    assert.ok(readme.includes(`\`${k.pattern}\``), `README documents ${k.pattern}`);
  }
});
