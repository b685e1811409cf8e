/**
 * The front door (SPEC 7): `npm start`'s command with no REDIS_URL runs the example jobs on a
 * private redis-server that never outlives the node; `npm run demo` shows three nodes
 * sharing ticks; the fastify embedding example serves its routes and the runner's.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive, spawnLeasehold, ROOT, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { ping } from '../src/cli/private-redis.js';

const redisAnswers = ping;

async function quickstart(): Promise<{ node: NodeProc; redisPort: number; httpPort: number }> {
  const node = spawnLeasehold(['start', '--jobs', 'examples/jobs.ts', '--private-redis'], { REDIS_URL: undefined, PORT: '0', LOG_LEVEL: 'info' });
  // A .ts jobs module is compiled at start: slow on a loaded machine.
  const started = await node.waitFor((l) => String(l['msg']).includes('private redis-server'), 30_000);
  const redisPort = Number(/127\.0\.0\.1:(\d+)/.exec(String(started['msg']))?.[1]);
  const listening = await node.waitFor((l) => typeof l['port'] === 'number', 30_000);
  return { node, redisPort, httpPort: Number(listening['port']) };
}

test('npm start with no REDIS_URL: a private Redis, jobs that run, the status URL, and nothing left after SIGTERM', async () => {
  const { node, redisPort, httpPort } = await quickstart();
  assert.ok(await redisAnswers(redisPort));
  // Its own line, after the one that says the port: each line is written as it is logged.
  await node.waitFor((l) => String(l['msg']).includes(`http://localhost:${httpPort}/manage/jobs`), 5_000);
  let rollupRuns = 0;
  for (let i = 0; i < 40 && rollupRuns < 2; i++) {
    await sleep(250);
    const res = await fetch(`http://127.0.0.1:${httpPort}/manage/jobs`);
    const body = (await res.json()) as { jobs: Array<{ id: string; runs: number }> };
    assert.deepEqual(body.jobs.map((j) => j.id).sort(), ['digest', 'export-batches', 'flaky-sync', 'refresh-local-cache', 'rollup']);
    rollupRuns = body.jobs.find((j) => j.id === 'rollup')?.runs ?? 0;
  }
  assert.ok(rollupRuns >= 2, `rollup ran ${rollupRuns} times`);
  node.kill('SIGTERM');
  assert.equal((await node.exited).code, 0);
  await sleep(300);
  assert.equal(await redisAnswers(redisPort), false, 'the private redis-server stopped with the node');
});

test('npm start killed with SIGKILL: its private redis-server does not outlive it', async () => {
  const { node, redisPort } = await quickstart();
  assert.ok(await redisAnswers(redisPort));
  node.kill('SIGKILL');
  await node.exited;
  let alive = true;
  for (let i = 0; i < 20 && alive; i++) {
    await sleep(100);
    alive = await redisAnswers(redisPort);
  }
  assert.equal(alive, false);
});

test('npm start killed with SIGTERM: the node notices its parent is gone and stops, with its private redis-server', async (t) => {
  const npm = spawn('npm', ['start', '--silent'], { cwd: ROOT, env: { ...process.env, REDIS_URL: '', PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (npm.exitCode === null) npm.kill('SIGKILL');
  });
  let out = '';
  npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const lines = (): Array<Record<string, unknown>> => out.split('\n').flatMap((l) => { try { return [JSON.parse(l) as Record<string, unknown>]; } catch { return []; } });
  for (let i = 0; i < 150 && !lines().some((l) => typeof l['port'] === 'number'); i++) await sleep(100);
  const started = lines().find((l) => String(l['msg']).includes('private redis-server'));
  const redisPort = Number(/127\.0\.0\.1:(\d+)/.exec(String(started?.['msg']))?.[1]);
  const nodePid = Number(lines().find((l) => typeof l['port'] === 'number')?.['pid']);
  assert.ok(nodePid > 0 && nodePid !== npm.pid, `the node runs under npm: ${out}`);
  assert.ok(await redisAnswers(redisPort));
  npm.kill('SIGTERM');
  let gone = false;
  for (let i = 0; i < 100 && !gone; i++) {
    await sleep(100);
    gone = !alive(nodePid) && !(await redisAnswers(redisPort));
  }
  if (!gone && alive(nodePid)) process.kill(nodePid, 'SIGKILL');
  assert.ok(gone, `the node (pid ${nodePid}) and its private Redis stop once npm is gone`);
});

test('npm run demo: three nodes share the installation ticks, one line a second, and stop cleanly', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/demo.ts'], { cwd: ROOT, env: { ...process.env, DEMO_SECONDS: '10', PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  assert.equal(code, 0, out);
  const tickLines = out.split('\n').filter((l) => /rollup@\d\d:\d\d:\d\d → node-[123]/.test(l));
  assert.ok(tickLines.length >= 3, out);
  const ticks = [...out.matchAll(/rollup@(\d\d:\d\d:\d\d) → (node-\d)/g)].map((m) => m[1]);
  assert.equal(new Set(ticks).size, ticks.length, 'each rollup tick on exactly one node');
  assert.match(out, /stopped: nodes and the private redis-server/);
  const port = Number(/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
  assert.equal(await redisAnswers(port), false);
});

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

test('the fastify embedding example serves the app and the runner, and shuts both down on SIGTERM', async (t) => {
  const port = 30_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/embed-fastify.ts'], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: redis.url, PORT: String(port), LEASEHOLD_ADMIN_TOKEN: 'embed-admin-token-0123456789' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  // A failed check must not leave the example running: the test file would never end.
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let body: { jobs: Array<{ id: string }> } | undefined;
  for (let i = 0; i < 120 && !body; i++) {
    await sleep(250);
    body = await fetch(`http://127.0.0.1:${port}/manage/jobs`).then((r) => (r.ok ? (r.json() as Promise<{ jobs: Array<{ id: string }> }>) : undefined), () => undefined);
  }
  assert.ok(body, 'the runner\'s routes answer on the app\'s server');
  assert.deepEqual(body.jobs.map((j) => j.id), ['purge-sessions']);
  assert.deepEqual(await (await fetch(`http://127.0.0.1:${port}/hello`)).json(), { hello: 'world' });
  const run = await fetch(`http://127.0.0.1:${port}/manage/jobs/purge-sessions/run`, { method: 'POST', headers: { authorization: 'Bearer embed-admin-token-0123456789' } });
  assert.equal(run.status, 202);
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
});
