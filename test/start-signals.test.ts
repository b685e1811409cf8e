/**
 * `leasehold start` hears a stop signal from its first step on (src/cli/start-signals.ts):
 * while it starts, the signal is kept; once it runs, the node's own handler takes the signals
 * over without a moment with no listener, so that a signal not yet dispatched is not lost.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

test('a SIGTERM that came as the node finished starting reaches the running node\'s handler, not lost in the hand-over', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/fixtures/start-signals-handover.ts'], { encoding: 'utf8', timeout: 20_000 });
  assert.deepEqual({ status: r.status, signal: r.signal, out: r.stdout.trim() }, { status: 0, signal: null, out: 'handler got SIGTERM' }, r.stderr);
});
