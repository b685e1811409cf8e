/**
 * scripts/test-exit.mjs in a process a test started: once its parent is gone (a test file's
 * process killed from outside, whose `after` hooks never ran), it is sent SIGTERM; while its
 * parent lives, it is left alone.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { alive } from './helpers/node.js';
import { until } from './helpers/wait.js';

const EXIT = fileURLToPath(new URL('../scripts/test-exit.mjs', import.meta.url));

test('a process a test started ends once the process that started it is killed, and not before', async () => {
  // The parent stands for a test file's process; its child, for a node or Nest app a test started.
  const child = "process.on('SIGTERM', () => { console.error('child got SIGTERM'); process.exit(0); }); setInterval(() => {}, 1000);";
  const parentCode = `const c = require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(child)}], { stdio: 'ignore' }); console.log(c.pid); setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', parentCode], {
    env: { ...process.env, LEASEHOLD_TEST_FILE: undefined, LEASEHOLD_TEST_CHILD: '1', NODE_OPTIONS: `--import ${EXIT}` },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  parent.stdout.on('data', (d: Buffer) => (out += d.toString()));
  let childPid = 0;
  try {
    await until('the child started', () => (childPid = Number.parseInt(out, 10)) > 0);
    await sleep(2_500);
    assert.ok(alive(childPid), 'the child runs on while its parent lives');
    parent.kill('SIGKILL');
    await until('the child gone', () => !alive(childPid), 8_000);
  } finally {
    parent.kill('SIGKILL');
    if (childPid > 0 && alive(childPid)) process.kill(childPid, 'SIGKILL');
  }
});
