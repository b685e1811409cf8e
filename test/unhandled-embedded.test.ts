/**
 * `createRunner({ unhandled })` (SPEC 3.7): an embedded runner installs the process's handling
 * of rejections nobody handles (and, with `'shutdown'`, of exceptions nobody catches) while it
 * runs, and removes it on stop; by default it installs nothing and Node's defaults apply. Each
 * case is an application process of its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRunner, isLeaseholdError, type UnhandledMode } from '../src/index.js';
import { ROOT } from './helpers/node.js';

function application(mode: UnhandledMode | undefined): { code: number | null; out: { before: number[]; running: number[]; after: number[]; counted: number } | undefined; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/embedded-unhandled.ts'], { cwd: ROOT, env: { ...process.env, MODE: mode ?? '' }, encoding: 'utf8', timeout: 30_000 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('{"before"'));
  return { code: r.status, out: line ? JSON.parse(line) : undefined, stdout: r.stdout, stderr: r.stderr };
}

test("'log': rejections are logged and counted while the runner runs; the listener is removed on stop", () => {
  const r = application('log');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.out?.before, [0, 0]);
  assert.deepEqual(r.out?.running, [1, 0], 'a rejection listener, no exception listener');
  assert.deepEqual(r.out?.after, [0, 0]);
  assert.ok((r.out?.counted ?? 0) >= 3, r.stdout);
  assert.match(r.stdout, /a promise rejected and nothing handled it in job \\"careless\\": nobody awaits this; the node keeps running/);
});

test("'shutdown': the exception listener too, removed on stop", () => {
  const r = application('shutdown');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.out?.running, [1, 1]);
  assert.deepEqual(r.out?.after, [0, 0]);
  assert.ok((r.out?.counted ?? 0) >= 3, r.stdout);
});

test('by default nothing is installed: the application keeps Node\'s defaults (here, the first rejection ends it)', () => {
  const r = application(undefined);
  assert.notEqual(r.code, 0);
  assert.equal(r.out, undefined);
  assert.match(r.stderr, /nobody awaits this/);
});

test('an unknown mode is refused with invalidConfig', () => {
  assert.throws(() => createRunner({ unhandled: 'ignore' as UnhandledMode }), (err: unknown) => isLeaseholdError(err, 'invalidConfig') && /unhandled must be one of "log", "shutdown", "off", got "ignore"/.test((err as Error).message));
});

test('a process ended by a signal right after the runner stopped (NestJS re-raises SIGTERM after its hooks) has every line the default logger wrote, the last one included', () => {
  for (let round = 0; round < 3; round++) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/embedded-signal-end.ts'], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info' }, encoding: 'utf8', timeout: 30_000, maxBuffer: 64 * 1024 * 1024 });
    assert.equal(r.signal, 'SIGTERM', r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.filter((l) => l.includes('"msg":"line"')).length, 3_000, `round ${round}`);
    assert.match(lines.at(-1) ?? '', /leasehold runner stopped/, `round ${round}: the last line`);
  }
});
