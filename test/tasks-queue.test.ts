/**
 * Queue executors on BullMQ, on a real redis-server, with real node processes: tasks submitted
 * on one node run on all, each exactly once; a node killed (kill -9) mid-task has its tasks run
 * again elsewhere, and only those; results readable from any node; the errors of bad input.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, defineTask, isLeaseholdError, type TaskEndedEvent } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';
import { readJsonLines } from './helpers/runs.js';

const NODE_SCRIPT = fileURLToPath(new URL('./fixtures/task-node.ts', import.meta.url));
let redis: TestRedis;
const children = new Set<ChildProcess>();
before(async () => {
  redis = await startRedis();
});
after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await redis.stop();
});

interface Line {
  ev: 'start' | 'end';
  id: string;
  n: number;
  inst: string;
  attempt: number;
}

function readLines(path: string): Line[] {
  return readJsonLines<Line>(path);
}

function startNode(inst: string, env: Record<string, string>): { child: ChildProcess; out: () => string; exited: Promise<unknown> } {
  const child = spawn(process.execPath, ['--import', 'tsx', NODE_SCRIPT], { env: { ...process.env, REDIS_URL: redis.url, LEASEHOLD_INSTANCE_ID: inst, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return { child, out: () => out, exited };
}

test('1,000 tasks submitted on one of three nodes run on all three, each exactly once, and their results come back', async () => {
  const log = join(mkdtempSync(join(tmpdir(), 'lh-queue-')), 'runs.jsonl');
  const prefix = 'q1';
  const env = { RUN_LOG: log, LEASEHOLD_PREFIX: prefix, TASK_BODY_MS: '2' };
  const b = startNode('node-b', env);
  const c = startNode('node-c', env);
  await until('nodes b and c to start', () => b.out().includes('ready') && c.out().includes('ready'), 20_000);
  const a = startNode('node-a', { ...env, SUBMIT: '1000' });
  await until('the results on node a', () => a.out().includes('"results"'), 40_000);
  assert.match(a.out(), /"results":1000,"ok":true/);
  const lines = readLines(log);
  const ends = lines.filter((l) => l.ev === 'end');
  const ids = new Set(ends.map((l) => l.id));
  assert.equal(ids.size, 1000, 'every task ran');
  assert.equal(ends.length, 1000, 'each exactly once');
  assert.equal(lines.filter((l) => l.ev === 'start').length, 1000);
  const byNode = new Map<string, number>();
  for (const l of ends) byNode.set(l.inst, (byNode.get(l.inst) ?? 0) + 1);
  assert.deepEqual([...byNode.keys()].sort(), ['node-a', 'node-b', 'node-c'], `spread: ${JSON.stringify([...byNode])}`);
  for (const p of [a, b, c]) p.child.kill('SIGTERM');
  await Promise.all([a.exited, b.exited, c.exited]);
});

test('kill -9 of a node mid-task: every task still completes, and only the tasks in flight on the dead node run again', async () => {
  const log = join(mkdtempSync(join(tmpdir(), 'lh-queue-')), 'runs.jsonl');
  const env = { RUN_LOG: log, LEASEHOLD_PREFIX: 'q2', TASK_BODY_MS: '150', TASK_LEASE: '3s', CONCURRENCY: '4' };
  const b = startNode('node-b', env);
  const c = startNode('node-c', env);
  await until('nodes b and c to start', () => b.out().includes('ready') && c.out().includes('ready'), 20_000);
  const a = startNode('node-a', { ...env, SUBMIT: '150' });
  // Its tasks start and end four at a time (150 ms each): after its eighth end it may be between
  // two rounds with none started yet, so it is killed once one is started and not ended.
  const unended = (lines: Line[]): string[] => {
    const ids = new Set(lines.filter((l) => l.inst === 'node-c' && l.ev === 'start').map((l) => l.id));
    for (const l of lines) if (l.inst === 'node-c' && l.ev === 'end') ids.delete(l.id);
    return [...ids];
  };
  await until('node c to be mid-task', () => {
    const lines = readLines(log);
    return lines.filter((l) => l.inst === 'node-c' && l.ev === 'end').length >= 8 && unended(lines).length > 0;
  }, 20_000);
  c.child.kill('SIGKILL');
  await c.exited;
  const atKill = readLines(log);
  const inFlight = new Set(unended(atKill));
  assert.ok(inFlight.size > 0, 'node c had tasks in flight');
  await until('the results on node a', () => a.out().includes('"results"'), 40_000).catch((err: unknown) => {
    const lines = readLines(log);
    const ended = new Set(lines.filter((l) => l.ev === 'end').map((l) => l.id));
    throw new Error(`${String(err)}; ${ended.size} tasks ended; node a said: ${a.out().slice(-2000)}`);
  });
  assert.match(a.out(), /"results":150,"ok":true/);
  const lines = readLines(log);
  const ends = lines.filter((l) => l.ev === 'end');
  assert.equal(new Set(ends.map((l) => l.id)).size, 150, 'every task completed');
  const starts = new Map<string, Line[]>();
  for (const l of lines.filter((x) => x.ev === 'start')) starts.set(l.id, [...(starts.get(l.id) ?? []), l]);
  const rerun = [...starts].filter(([, s]) => s.length > 1).map(([id]) => id);
  // In flight on the dead node: its tasks whose handler had not ended, and any whose handler had
  // ended but whose completion BullMQ had not yet recorded when the node died (a few ms).
  const ranOnDead = new Set(atKill.filter((l) => l.inst === 'node-c' && l.ev === 'start').map((l) => l.id));
  assert.deepEqual([...inFlight].filter((id) => !rerun.includes(id)), [], 'every task whose handler had not ended ran again');
  assert.deepEqual(rerun.filter((id) => !ranOnDead.has(id)), [], `re-runs (${rerun.length}) are all of tasks the dead node had taken (${inFlight.size} not ended)`);
  assert.ok(rerun.length <= inFlight.size + 4, `re-runs ${rerun.length}: the unended ${inFlight.size} and at most the completions of the node's last moments (concurrency 4)`);
  for (const id of rerun) {
    const again = starts.get(id)?.at(-1);
    assert.notEqual(again?.inst, 'node-c');
    assert.ok((again?.attempt ?? 0) >= 2, 'ctx.attempt says it is another attempt');
  }
  for (const p of [a, b]) p.child.kill('SIGTERM');
  await Promise.all([a.exited, b.exited]);
});

test('in one process: attempts with backoff, a task no node registered kept as failed, a payload that is not JSON, results from another node, a shutdown that puts tasks back', async () => {
  const log = memoryLogger('info');
  const mk = (inst: string) => createRunner({ redisUrl: redis.url, prefix: 'q3', instanceId: inst, logger: log.logger, shutdownGrace: '200ms', executors: { mail: { kind: 'queue', attempts: 3, backoff: '50ms', lease: '1s' } } });
  const r1 = mk('one');
  const r2 = mk('two');
  const ended: TaskEndedEvent[] = [];
  r1.on('taskEnded', (e) => ended.push(e));
  let tries = 0;
  const flaky = defineTask({
    id: 'flaky-mail',
    executor: 'mail',
    run: (to: string, ctx) => {
      tries++;
      if (ctx.attempt < 3) throw new Error(`smtp refused ${to}`);
      return `sent to ${to} on attempt ${ctx.attempt}`;
    },
  });
  r1.addTask(flaky);
  await r1.start();
  await r2.start();
  const h = await r2.submit(flaky, 'ops@example.com', { id: 'mail-1' });
  assert.equal(await h.result(), 'sent to ops@example.com on attempt 3');
  assert.equal(tries, 3);
  assert.deepEqual(ended.map((e) => `${e.outcome}:${e.willRetry}`), ['failed:true', 'failed:true', 'succeeded:false']);
  const again = await r2.submit(flaky, 'ops@example.com', { id: 'mail-1' });
  assert.equal(again.id, 'mail-1');
  assert.equal(await again.result(), 'sent to ops@example.com on attempt 3', 'the same id is the same task; its result is read from Redis');
  const orphan = defineTask({ id: 'nobody-runs-me', executor: 'mail', run: () => 1 });
  const o = await r2.submit(orphan, null);
  await assert.rejects(o.result(), /task "nobody-runs-me" .* no task of that id is registered on node one/);
  const stats = (await r1.executors()).find((s) => s.name === 'mail');
  assert.ok((stats?.failed ?? 0) >= 1, 'the failed task is kept and counted');
  await assert.rejects(r2.submit(flaky, { big: 10n } as never), (err: unknown) => isLeaseholdError(err, 'invalidPayload') && /payload cannot be serialised as JSON/.test((err as Error).message));
  const slow = defineTask({ id: 'slow-mail', executor: 'mail', run: (_: null, ctx) => sleep(2_000, null, { signal: ctx.signal }).then(() => 'late') });
  r1.addTask(slow);
  r2.addTask(slow);
  await r2.stop();
  const s = await r1.submit(slow, null);
  await sleep(300);
  await r1.stop();
  const r3 = mk('three');
  r3.addTask(slow);
  await r3.start();
  const back = await r3.submit(slow, null, { id: s.id });
  assert.equal(await back.result(), 'late', 'a task interrupted by a shutdown went back to the queue and ran on another node');
  await r3.stop();
  await assert.rejects(r3.submit(slow, null), (err: unknown) => isLeaseholdError(err, 'shutdown'));
});

test('a result still awaited when the node stops rejects with code shutdown, and the task stays on the queue', async () => {
  const log = memoryLogger('info');
  const runner = createRunner({ redisUrl: redis.url, prefix: 'q5', instanceId: 'waiter', logger: log.logger, shutdownGrace: '100ms', executors: { later: { kind: 'queue' } } });
  // Submitted as a definition and registered on no node: nobody runs it.
  const nobody = defineTask({ id: 'run-by-nobody', executor: 'later', run: () => 1 });
  await runner.start();
  const handle = await runner.submit(nobody, null, { id: 'kept-1' });
  const rejected = assert.rejects(handle.result(), (err: unknown) => isLeaseholdError(err, 'shutdown') && /stopped before the task's result came/.test((err as Error).message));
  await runner.stop();
  await rejected;
  const client = redis.client();
  assert.equal(await client.exists('q5:tasks:{later}:kept-1'), 1, 'the task is still queued');
  await client.quit();
});
