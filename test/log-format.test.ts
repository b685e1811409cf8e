/**
 * Logs for people and for machines: readable lines on a terminal (or with LOG_FORMAT=pretty),
 * JSON lines otherwise; secrets redacted in both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, logFormat } from '../src/log/logger.js';

function sink(): { stream: Writable; text: () => string } {
  let out = '';
  const stream = new Writable({ write(chunk: Buffer, _enc, cb) { out += chunk.toString(); cb(); } });
  return { stream, text: () => out };
}

test('the format follows LOG_FORMAT, else the terminal: pretty on a TTY, JSON in a pipe', () => {
  assert.equal(logFormat(undefined, true), 'pretty');
  assert.equal(logFormat(undefined, false), 'json');
  assert.equal(logFormat('json', true), 'json');
  assert.equal(logFormat(' PRETTY ', false), 'pretty');
  assert.throws(() => logFormat('xml', false), /LOG_FORMAT: "xml" is not one of json, pretty/);
});

test('pretty lines are readable and keep secrets redacted; JSON lines stay JSON', () => {
  const p = sink();
  createLogger({ format: 'pretty', destination: p.stream }).info({ jobId: 'digest', token: 'sekret-token' }, 'job "%s" recovered', 'digest');
  assert.match(p.text(), /INFO.*job "digest" recovered/);
  assert.match(p.text(), /jobId: "digest"/);
  assert.doesNotMatch(p.text(), /sekret-token/);
  assert.doesNotMatch(p.text(), /^\{/);
  const j = sink();
  createLogger({ format: 'json', destination: j.stream }).info({ token: 'sekret-token' }, 'hello');
  const line = JSON.parse(j.text()) as Record<string, unknown>;
  assert.equal(line['msg'], 'hello');
  assert.equal(line['token'], '[redacted]');
});

test('leasehold start on a terminal prints readable lines that say where the status, the metrics and Redis are', async () => {
  const { spawn } = await import('node:child_process');
  const { ROOT } = await import('./helpers/node.js');
  // `script` gives the node a terminal as its stdout.
  const child = spawn('script', ['-qfec', 'node bin/leasehold.js start --jobs examples/jobs.ts --private-redis --port 0', '/dev/null'], {
    cwd: ROOT, env: { ...process.env, REDIS_URL: '', LOG_FORMAT: '', LOG_LEVEL: 'info' }, stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  for (let i = 0; i < 150 && !/status: /.test(out); i++) await new Promise((r) => setTimeout(r, 100));
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  // eslint-disable-next-line no-control-regex -- strips the terminal's colours
  const plain = out.replace(/\u001b\[[0-9;]*m/g, '');
  const line = plain.split('\n').find((l) => l.includes('status: '));
  assert.ok(line, plain);
  assert.match(line, /INFO.*status: http:\/\/localhost:\d+\/manage\/jobs · page: http:\/\/localhost:\d+\/manage\/ui · metrics: http:\/\/localhost:\d+\/metrics · Redis: redis:\/\/127\.0\.0\.1:\d+/);
  assert.ok(!plain.split('\n').some((l) => l.trim().startsWith('{"level"')), 'no JSON lines on a terminal');
});

test('a recovery says how many unsuccessful runs came before it, in the singular for one', async () => {
  const { logStreakChange } = await import('../src/log/listener.js');
  const run = { jobId: 'digest', runId: 'r1', outcome: 'succeeded', durationMs: 3, instanceId: 'node-a' } as unknown as Parameters<typeof logStreakChange>[1]['run'];
  const lines = (failedRuns: number): string => {
    const s = sink();
    logStreakChange(createLogger({ format: 'json', destination: s.stream }), { kind: 'recovered', run, failedRuns });
    return String((JSON.parse(s.text()) as Record<string, unknown>)['msg']);
  };
  assert.equal(lines(1), 'job "digest" recovered after 1 unsuccessful run');
  assert.equal(lines(3), 'job "digest" recovered after 3 unsuccessful runs');
});
