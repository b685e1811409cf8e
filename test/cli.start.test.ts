/**
 * `leasehold start` as a real process (SPEC 3, 7): overruns, timeouts, failures, and a
 * clean exit on SIGTERM and SIGINT. Real time, generous bounds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnLeasehold, runLeasehold } from './helpers/node.js';

test('a node runs its jobs and exits 0 by itself on SIGTERM, interrupting the long run', async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-basic.mjs', '--port', '0'], { LEASEHOLD_SHUTDOWN_GRACE: '500ms' });
  await node.waitFor((l) => l['msg'] === 'leasehold runner started');
  // overrunner: 1 s runs every 300 ms → skips with reason overrun
  await node.waitFor((l) => l['jobId'] === 'overrunner' && l['reason'] === 'overrun');
  // slowpoke: timed out after 300 ms, honouring its signal
  const timedOut = await node.waitFor((l) => l['jobId'] === 'slowpoke' && l['outcome'] === 'timedOut');
  assert.match(String(timedOut['msg']), /timed out after 300ms/);
  // always-fails: fails every 200 ms but is logged once at warn
  await new Promise((r) => setTimeout(r, 1500));
  const failWarns = node.lines.filter((l) => l['jobId'] === 'always-fails' && l['level'] === 40);
  const failRuns = node.lines.filter((l) => l['jobId'] === 'always-fails' && l['outcome'] === 'failed');
  assert.equal(failWarns.length, 1, 'one warning for the whole failing streak');
  assert.ok(failRuns.length >= 3, `failed runs recorded: ${failRuns.length}`);
  assert.match(String(failWarns[0]?.['msg']), /upstream said no/);

  const t0 = Date.now();
  node.kill('SIGTERM');
  const { code } = await node.exited;
  assert.equal(code, 0);
  assert.ok(Date.now() - t0 < 8_000, 'exits within grace plus a margin');
  const interrupted = node.lines.find((l) => l['jobId'] === 'long-runner' && String(l['msg']).includes('interrupted'));
  assert.ok(interrupted, 'the run still going after the grace is recorded as interrupted');
});

test('SIGINT stops the node cleanly too', async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-valid.ts', '--port', '0', '--local']);
  await node.waitFor((l) => l['msg'] === 'leasehold runner started');
  node.kill('SIGINT');
  assert.equal((await node.exited).code, 0);
});

test('SIGTERM while the node is still starting stops it cleanly, exit 0, before it runs a job', async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-slow-load.mjs', '--port', '0', '--local']);
  await node.waitFor((l) => l['msg'] === 'jobs module loading');
  node.kill('SIGTERM');
  const { code, signal } = await node.exited;
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, 'an exit of its own, not the signal\'s default');
  assert.ok(node.lines.some((l) => /received SIGTERM while starting/.test(String(l['msg']))), 'it says why it stops');
  assert.equal(node.lines.filter((l) => l['msg'] === 'leasehold runner started' || l['outcome'] !== undefined).length, 0, 'no job ran');
});

test('a second signal while the node is still starting exits at once, 130', async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-slow-load.mjs', '--port', '0', '--local']);
  await node.waitFor((l) => l['msg'] === 'jobs module loading');
  node.kill('SIGINT');
  await node.waitFor((l) => /received SIGINT while starting/.test(String(l['msg'])));
  node.kill('SIGINT');
  assert.equal((await node.exited).code, 130);
});

test('a node whose jobs module holds a handle open (a pool, a client) still exits 0 on SIGTERM, naming what was left open', { timeout: 30_000 }, async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-holding.mjs', '--port', '0', '--local']);
  await node.waitFor((l) => l['msg'] === 'leasehold runner started');
  const t0 = Date.now();
  node.kill('SIGTERM');
  const { code } = await node.exited;
  assert.equal(code, 0, node.stderr());
  assert.ok(Date.now() - t0 < 8_000, `exited ${Date.now() - t0} ms after SIGTERM`);
  const warned = node.lines.find((l) => l['level'] === 40 && String(l['msg']).includes('exiting anyway'));
  assert.ok(warned, 'the exit says why the process had not ended by itself');
  assert.match(String(warned['msg']), /TCPServerWrap/);
});

test('bad flags, a missing module, a broken module or a non-array export: one clear line, non-zero exit', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['start', '--jobs', 'test/fixtures/jobs-valid.ts', '--bogus', '1'], /bogus/],
    [['start'], /--jobs <module> is required/],
    [['start', '--jobs', 'test/fixtures/nope.mjs'], /nope\.mjs: no such file/],
    [['start', '--jobs', 'test/fixtures/jobs-not-array.mjs'], /default export must be an array/],
    [['start', '--jobs', 'test/fixtures/jobs-invalid.ts'], /job "bad-hour": field "cron".*hour/],
    [['start', '--jobs', 'test/fixtures/jobs-valid.ts', '--port', 'eighty'], /not a port/],
    [['start', '--jobs', 'package.json'], /failed to load|default export/],
  ];
  for (const [args, message] of cases) {
    const r = await runLeasehold(args);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stderr.trim().split('\n').length, 1, `one line, not a stack trace: ${r.stderr}`);
  }
});

test('leasehold check: exit 0 for valid jobs, non-zero with every message otherwise', async () => {
  const ok = await runLeasehold(['check', 'test/fixtures/jobs-valid.ts']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /2 jobs ok/);
  const bad = await runLeasehold(['check', 'test/fixtures/jobs-invalid.ts']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /job "bad-hour": field "cron".*hour/);
});
