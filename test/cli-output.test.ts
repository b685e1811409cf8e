/**
 * A one-shot command's output reaches a slow reader whole: the process exits only once what it
 * printed is written, and a reader that goes away early ends it quietly. Runs the built CLI
 * (`npm run build` first).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, ROOT } from './helpers/node.js';

const JOBS = 3_000;
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-output-'));
  // Far more than a pipe holds (64 KiB): one line of about 130 bytes per job.
  writeFileSync(join(dir, 'many-invalid.mjs'), `export default Array.from({ length: ${JOBS} }, (_, i) => ({ id: \`job-\${i}\`, cron: '0 0 25 * * *', run() {} }));\n`);
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI with both pipes left unread for `delayMs`, as a busy reader would. */
function runSlowlyRead(args: string[], delayMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pause();
  child.stderr.pause();
  let stdout = '';
  let stderr = '';
  setTimeout(() => {
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString())).resume();
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString())).resume();
  }, delayMs);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

test('leasehold check prints every problem to a slow pipe, ending with a newline', { timeout: 60_000 }, async () => {
  const file = join(dir, 'many-invalid.mjs');
  const r = await runSlowlyRead(['check', file], 500);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.endsWith('\n'), `ends with a newline: ${JSON.stringify(r.stderr.slice(-80))}`);
  const lines = r.stderr.slice(0, -1).split('\n');
  assert.equal(lines.length, JOBS, `${lines.length} lines of ${JOBS}`);
  lines.forEach((line, i) => assert.match(line, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: job "job-${i}": field "cron": .*hour`)));
});

test('leasehold next -n 10000 prints every fire time to a slow pipe', { timeout: 60_000 }, async () => {
  const r = await runSlowlyRead(['next', '* * * * * *', '--from', '2026-01-01T00:00:00Z', '-n', '10000'], 500);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.endsWith('\n'));
  const lines = r.stdout.slice(0, -1).split('\n');
  assert.equal(lines.length, 10_000);
  assert.equal(lines.at(-1), '2026-01-01T02:46:40+00:00');
});

test('a reader that goes away early ends the command quietly (leasehold next ... | head -1)', { timeout: 60_000 }, async () => {
  const child = spawn(process.execPath, [BIN, 'next', '* * * * * *', '-n', '10000'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.once('data', () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(stderr, '');
  assert.equal(code, 0);
});
