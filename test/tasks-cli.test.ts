/**
 * `leasehold start` with a `.ts` jobs module that puts a job on a worker thread: the built CLI
 * on plain Node, the thread loading the module through tsx's API, its log lines on the node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnLeasehold } from './helpers/node.js';

test('a job with thread: "worker" in a .ts jobs module runs in a worker thread under the CLI, logging through the node; the module\'s executors are the node\'s', async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-threads.ts', '--port', '0'], { LEASEHOLD_SHUTDOWN_GRACE: '500ms', REDIS_URL: undefined, LOG_LEVEL: 'info' });
  const line = await node.waitFor((l) => l['msg'] === 'crunched in a worker thread', 15_000);
  assert.equal(line['jobId'], 'crunch', 'the run\'s bindings');
  assert.ok(typeof line['runId'] === 'string');
  assert.ok(Number(line['threadId']) > 0, 'not the main thread');
  await node.waitFor((l) => l['jobId'] === 'crunch' && l['msg'] === 'crunched in a worker thread' && l['runId'] !== line['runId'], 5_000);
  const refused = await node.waitFor((l) => l['jobId'] === 'submit-from-thread' && typeof l['error'] === 'string', 10_000);
  assert.match(String(refused['error']), /ctx\.submit is not available on a worker thread/);
  // The executors the module exports beside its jobs are the node's.
  const listening = await node.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'));
  const res = await fetch(`http://127.0.0.1:${String(listening['port'])}/manage/executors`);
  const { executors } = (await res.json()) as { executors: Array<{ name: string; kind: string; concurrency: number }> };
  assert.deepEqual(executors.map((e) => [e.name, e.kind, e.concurrency]), [['cpu', 'worker', 1]]);
  node.kill('SIGTERM');
  const { code } = await node.exited;
  assert.equal(code, 0);
  assert.ok(!node.lines.some((l) => l['level'] === 50 && l['jobId'] !== 'submit-from-thread'), `no other error: ${JSON.stringify(node.lines.filter((l) => l['level'] === 50))}`);
});

test('a job run by leasehold start submits tasks of its jobs module through ctx.submit and gets their results', async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-submit.mjs', '--port', '0'], { LEASEHOLD_SHUTDOWN_GRACE: '500ms', REDIS_URL: undefined, LOG_LEVEL: 'info' });
  try {
    const done = await node.waitFor((l) => l['msg'] === 'digest handed out', 15_000);
    assert.deepEqual(done['results'], ['sent to ada', 'sent to grace']);
    const sent = node.lines.filter((l) => l['msg'] === 'mail sent');
    assert.ok(sent.some((l) => l['to'] === 'ada' && l['executor'] === 'mail'), JSON.stringify(sent));
    const unknown = await node.waitFor((l) => l['jobId'] === 'submits-unknown' && typeof l['error'] === 'string', 10_000);
    assert.match(String(unknown['error']), /no task "no-such-task" is registered on this node/);
  } finally {
    node.kill('SIGTERM');
    assert.equal((await node.exited).code, 0);
  }
});
