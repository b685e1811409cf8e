/**
 * The docs stay true to the code: each part of a page that is generated from the code (the
 * configuration table, the Redis key table, the error table, the commands' help, the MCP
 * tools) is what scripts/docs-tables.ts renders today, every environment variable the code
 * reads is in the configuration table, every Redis key of the key module is in the key table,
 * and the ACL line of the Redis page is the one the ACL tests apply. `npm run build` first (the
 * CLI and MCP parts run the built command).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG } from '../src/cli/config.js';
import { KEY_TABLE } from '../src/redis/keys.js';
import { ErrorCodes } from '../src/errors.js';
import { PARTS, section } from '../scripts/docs-tables.js';
import { ROOT } from './helpers/node.js';

const read = (page: string): string => readFileSync(join(ROOT, page), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

for (const part of PARTS) {
  test(`${part.page}: the ${part.name} part is the one the code renders (npx tsx scripts/docs-tables.ts refreshes it)`, async () => {
    const shown = section(read(part.page), part.name);
    assert.notEqual(shown, undefined, `${part.page} has the ${part.name} markers`);
    assert.equal(shown, await part.render());
  });
}

test('every environment variable the code reads is in the configuration table', () => {
  const documented = new Set(CONFIG.flatMap((e) => (e.env ? [e.env] : [])));
  const read = new Set<string>();
  for (const file of sources(join(ROOT, 'src'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/env\[['"]([A-Z][A-Z0-9_]+)['"]\]/g)) read.add(m[1] as string);
  }
  assert.ok(read.size >= 3, `found the env reads: ${[...read].join(', ')}`);
  for (const name of read) assert.ok(documented.has(name), `${name} is read by the code but not documented`);
});

test('every Redis key is in the key table, and every error code in the error table', () => {
  const keys = section(read('docs/reference/redis-keys.md'), 'key-table') ?? '';
  for (const k of KEY_TABLE) assert.ok(keys.includes(`\`${k.pattern}\``), `the key table documents ${k.pattern}`);
  const errors = section(read('docs/reference/errors.md'), 'error-table') ?? '';
  for (const code of Object.values(ErrorCodes)) assert.ok(errors.includes(`| \`${code}\` |`), `the error table has a row for ${code}`);
});

test('the ACL line of the Redis page is the one docs/reliability.md has, which the ACL tests apply', () => {
  const line = (page: string): string | undefined => read(page).split('\n').find((l) => l.startsWith('ACL SETUSER '));
  assert.ok(line('docs/guide/redis-setup.md'), 'docs/guide/redis-setup.md shows the ACL');
  assert.equal(line('docs/guide/redis-setup.md'), line('docs/reliability.md'));
});
