/**
 * The contract of the error codes (STYLE "Errors"; fastify's test/internals/errors.test.js
 * checks its own the same way): every code unique, camelCase and spelled as its key,
 * documented in the source, raised somewhere in src/ and always through `ErrorCodes`, the
 * abort reasons a subset of the codes, and the README's error table the one rendered from
 * the description list.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AbortReasonCodes, ERROR_TABLE, ErrorCodes, LeaseholdError, isLeaseholdError, renderErrorTable, type ErrorCode } from '../src/errors.js';

const srcDir = new URL('../src', import.meta.url).pathname;
const errorsFile = join(srcDir, 'errors.ts');
const codes: string[] = Object.values(ErrorCodes);

/** Codes that no module of src/ raises yet, each with the reason it is kept. */
const NOT_RAISED: Readonly<Record<string, string>> = {};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every `.ts` file of src/ but errors.ts, with its text. */
const others = sources(srcDir)
  .filter((f) => f !== errorsFile)
  .map((file) => ({ file: relative(srcDir, file), text: readFileSync(file, 'utf8') }));

/** The entries of the `ErrorCodes` literal as written in errors.ts: key, value, and the TSDoc comment before it. */
function writtenEntries(): Array<{ key: string; value: string; doc: string | undefined }> {
  const text = readFileSync(errorsFile, 'utf8');
  const body = /export const ErrorCodes = \{\n([\s\S]*?)\n\} as const;/.exec(text)?.[1];
  assert.ok(body, 'errors.ts declares `export const ErrorCodes = { ... } as const;`');
  const entries: Array<{ key: string; value: string; doc: string | undefined }> = [];
  let doc: string | undefined;
  for (const line of body.split('\n')) {
    const comment = /^\s*\/\*\*\s*(.*?)\s*\*\/\s*$/.exec(line);
    const entry = /^\s*(\w+): '([^']*)',\s*$/.exec(line);
    if (comment) doc = comment[1];
    else if (entry) {
      entries.push({ key: entry[1] as string, value: entry[2] as string, doc });
      doc = undefined;
    } else assert.fail(`unexpected line in ErrorCodes (one-line TSDoc, then \`key: 'value',\`): ${JSON.stringify(line)}`);
  }
  return entries;
}

test('every code is unique, camelCase, and spelled as its key', () => {
  assert.equal(new Set(codes).size, codes.length, 'no two keys share a code');
  for (const [key, code] of Object.entries(ErrorCodes)) {
    assert.equal(code, key, `ErrorCodes.${key} is spelled as its key`);
    assert.match(code, /^[a-z][a-zA-Z0-9]*$/, `${code} is camelCase`);
  }
  const lower = codes.map((c) => c.toLowerCase());
  assert.equal(new Set(lower).size, codes.length, 'no two codes differ only in case');
});

test('every code has a TSDoc comment in errors.ts, and it is its meaning in the error table', () => {
  const entries = writtenEntries();
  assert.deepEqual(entries.map((e) => e.key), Object.keys(ErrorCodes), 'the parsed entries are the exported ones');
  for (const { key, doc } of entries) {
    assert.ok(doc, `ErrorCodes.${key} has a TSDoc comment`);
    assert.equal(doc, ERROR_TABLE[key as ErrorCode].meaning, `the TSDoc of ErrorCodes.${key} is its meaning in ERROR_TABLE`);
  }
});

test('the description list describes exactly the codes, each with a meaning and what to do', () => {
  assert.deepEqual(Object.keys(ERROR_TABLE), codes, 'one entry per code, in the order of ErrorCodes');
  for (const code of codes) {
    const d = ERROR_TABLE[code as ErrorCode];
    assert.ok(d.meaning.trim().length > 0 && d.action.trim().length > 0, code);
    assert.ok(!/\|/.test(d.meaning + d.action), `${code}: no "|" (it would break the table)`);
  }
});

test('every code is used somewhere in src/, except the ones listed with a reason', () => {
  const used = new Set<string>();
  for (const { text } of others) for (const m of text.matchAll(/\bErrorCodes\.(\w+)/g)) used.add(m[1] as string);
  for (const key of used) assert.ok(key in ErrorCodes, `ErrorCodes.${key} is a code`);
  for (const code of codes) {
    if (code in NOT_RAISED) assert.ok(!used.has(code), `${code} is used now: take it off NOT_RAISED`);
    else assert.ok(used.has(code), `${code} is used nowhere in src/: raise it, or remove it (codes are never reused)`);
  }
  for (const code of Object.keys(NOT_RAISED)) assert.ok(codes.includes(code), `NOT_RAISED lists ${code}, which is no code`);
});

test('src/ names a code only through ErrorCodes, never as a string literal', () => {
  const literal = `['"\`]`;
  const patterns = [
    new RegExp(`\\bLeaseholdError\\(\\s*${literal}`),
    new RegExp(`\\bisLeaseholdError\\([^,()]*,\\s*${literal}`),
    // Our codes are camelCase; Node's own (`'ENOENT'`) are upper case and may be compared.
    new RegExp(`\\.code\\s*[!=]==?\\s*${literal}[a-z]`),
    new RegExp(`\\.abort\\(\\s*${literal}`),
  ];
  const wrong: string[] = [];
  for (const { file, text } of others) {
    text.split('\n').forEach((line, i) => {
      if (patterns.some((p) => p.test(line))) wrong.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(wrong, []);
});

test('the abort reasons are a subset of the codes: the ones whose meaning says "an abort reason"', () => {
  assert.equal(new Set(AbortReasonCodes).size, AbortReasonCodes.length);
  for (const reason of AbortReasonCodes) assert.ok(codes.includes(reason), `${reason} is a code`);
  const documented = codes.filter((c) => ERROR_TABLE[c as ErrorCode].meaning.includes('(an abort reason)'));
  assert.deepEqual([...AbortReasonCodes].sort(), documented.sort());
});

test('the error table in the README is the one errors.ts renders (run `npx tsx scripts/readme-tables.ts` to refresh it)', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const m = /<!-- error-table:start -->\n([\s\S]*?)\n<!-- error-table:end -->/.exec(readme);
  assert.ok(m, 'README has the error-table markers');
  assert.equal(m[1], renderErrorTable());
  for (const code of codes) assert.ok(m[1].includes(`| \`${code}\` |`), `the table has a row for ${code}`);
});

test('a LeaseholdError carries its code, and isLeaseholdError tells codes apart', () => {
  const cause = new Error('below');
  const err = new LeaseholdError(ErrorCodes.invalidCron, 'Invalid cron expression "x": it is empty', { cause });
  assert.equal(err.name, 'LeaseholdError');
  assert.equal(err.code, 'invalidCron');
  assert.equal(err.cause, cause);
  assert.ok(err instanceof Error);
  assert.ok(isLeaseholdError(err));
  assert.ok(isLeaseholdError(err, ErrorCodes.invalidCron));
  assert.ok(!isLeaseholdError(err, ErrorCodes.invalidZone));
  assert.ok(!isLeaseholdError(new Error('x')));
});
