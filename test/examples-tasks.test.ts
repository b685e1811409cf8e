/**
 * The background-tasks example (`examples/tasks.ts`, linked from docs/guide/background-tasks.md)
 * runs as the docs say: `npx tsx examples/tasks.ts` with REDIS_URL, then
 * `curl -X POST localhost:3000/orders/42` answers with the report built on a worker thread.
 * The thread imports the report task's module, top-level code included: that module has no side
 * effects, so the thread starts no second server (EADDRINUSE) and no second runner. And the
 * way a module tells it is loaded in a leasehold worker thread: `isWorkerThread()`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from './helpers/node.js';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';
import { createRunner, isWorkerThread } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { seen, where } from './fixtures/worker-side-effects.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

test('examples/tasks.ts answers POST /orders/42 with the report from a worker thread, with one server and one runner', async (t) => {
  const port = await freePort();
  // `npx tsx examples/tasks.ts`, as the docs say; the webhook goes to the example itself (loopback only).
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/tasks.ts'], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: redis.url, PORT: String(port), WEBHOOK_URL: `http://127.0.0.1:${port}/hooks/orders` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  let res: Response | undefined;
  for (let i = 0; i < 240 && !res; i++) {
    await sleep(250);
    res = await fetch(`http://127.0.0.1:${port}/orders/42`, { method: 'POST' }).catch(() => undefined);
  }
  assert.ok(res, `the example serves on its port: ${out.slice(-1000)}`);
  const body = (await res.json()) as { orderId?: string; digest?: string; message?: string };
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.orderId, '42');
  assert.match(String(body.digest), /^[0-9a-f]{64}$/);
  // A second order uses the thread the first one loaded.
  const again = await fetch(`http://127.0.0.1:${port}/orders/43`, { method: 'POST' });
  assert.equal(again.status, 200);
  assert.doesNotMatch(out, /EADDRINUSE/);
  assert.equal(out.match(/leasehold runner started/g)?.length, 1, `one runner, none started in the thread: ${out.slice(-2000)}`);
  child.kill('SIGTERM');
  assert.equal(await exited, 0, out.slice(-1000));
});

test('isWorkerThread() is false on the main thread and true in a module a worker task is loaded from', async () => {
  assert.equal(isWorkerThread(), false);
  const log = memoryLogger('warn');
  const runner = createRunner({ logger: log.logger, executors: { cpu: { kind: 'worker', concurrency: 1 } } });
  runner.addTask(where);
  await runner.start();
  try {
    assert.deepEqual(seen(), { atLoad: false, inTask: false, sideEffects: 1 }, 'imported on the main thread, the module ran its side effect');
    const inThread = await (await runner.submit(where, null)).result();
    assert.deepEqual(inThread, { atLoad: true, inTask: true, sideEffects: 0 }, 'the module knew at its top level that it was loaded in a worker thread, and skipped its side effect');
  } finally {
    await runner.stop();
  }
});
