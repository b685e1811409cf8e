/**
 * `@Scheduled` and `@Async` under both of TypeScript's decorator modes: one fixture class,
 * compiled by tsc once with standard decorators and once with `experimentalDecorators` and
 * `emitDecoratorMetadata` (a NestJS project's settings), runs the same: its scheduled method
 * ticks on the instance, its `@Async` method returns through the executor, a call before
 * registration is refused, and a static scheduled method is refused naming it.
 * Compiles against the built package (`npm run build` first).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './helpers/node.js';

const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'decorator-modes', 'main.ts');

/** Compiles the fixture with the flags given into a directory that resolves `leasehold` to this package, and runs it. */
function compileAndRun(flags: string[]): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-decorator-modes-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'leasehold'), 'dir');
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const base = ['--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--skipLibCheck', '--types', 'node', '--outDir', dir, '--rootDir', join(ROOT, 'test', 'fixtures', 'decorator-modes')];
  try {
    execFileSync(process.execPath, [TSC, ...base, ...flags, FIXTURE], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    assert.fail(`tsc ${flags.join(' ')} failed:\n${(err as { stdout?: string }).stdout ?? String(err)}`);
  }
  const out = execFileSync(process.execPath, [join(dir, 'main.js')], { cwd: dir, encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'silent' } });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
}

for (const [mode, flags] of [
  ['standard decorators', []],
  ['experimentalDecorators with emitDecoratorMetadata', ['--experimentalDecorators', '--emitDecoratorMetadata']],
] as const) {
  test(`@Scheduled and @Async compile and run under ${mode}`, () => {
    const r = compileAndRun([...flags]);
    assert.deepEqual(r['ids'], ['Reports.tick']);
    assert.ok(typeof r['ticks'] === 'number' && r['ticks'] >= 2, `the scheduled method ran on the instance ${String(r['ticks'])} times`);
    assert.equal(r['greeting'], 'hello, Ada', 'the @Async method ran with this bound to the registered instance');
    assert.match(String(r['early']), /@Async method Reports\.greet called before its instance was registered/);
    assert.match(String(r['staticRefused']), /"Nightly\.tick": field "@Scheduled": a scheduled method must be a public instance method .*not a static one/);
  });
}
