/**
 * The node's own HTTP server on a real port (SPEC 5, 3.6): port 0 picks a free port and the
 * port is logged; the routes answer over TCP; after stop the process exits on its own.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { createNode } from '../src/create/index.js';
import { startHttpServer } from '../src/http/server.js';
import { memoryLogger } from './helpers/log.js';
import { ROOT } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

describe('http server', () => {
  let server: TestRedis;
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    await server.stop();
  });

  it('listens on a free port, logs it, answers over TCP, and closes', async () => {
    const { logger, lines } = memoryLogger();
    const layer = createNode({ instanceId: 'port-test', logger, shutdownGraceMs: 100, redis: { url: server.url }, prefix: 'http-server-test' });
    const core = layer.core;
    core.add({ id: 'tick', fixedRate: '100ms', run: () => undefined });
    await layer.start();
    core.start();
    const http = await startHttpServer({ host: '127.0.0.1', port: 0, routes: layer.routes, logger });
    try {
      assert.ok(http.port > 0);
      const logged = lines.find((l) => l['msg'] === `HTTP listening on port ${http.port}`);
      assert.equal(logged?.['port'], http.port);
      const health = await fetch(`${http.url}/health`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok', reasons: [] });
      const long = await fetch(`${http.url}/manage/jobs/${'a'.repeat(128)}`);
      assert.equal(long.status, 404, 'a 128-character id is a job id, not a bad path');
      const jobs = (await (await fetch(`${http.url}/manage/jobs`)).json()) as { jobs: Array<{ id: string }> };
      assert.deepEqual(jobs.jobs.map((j) => j.id), ['tick']);
    } finally {
      await http.close();
      await core.stop();
      await layer.stop();
    }
    await assert.rejects(fetch(`${http.url}/health`));
  });

  it('a process with the status layer and server exits on its own after stop', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/jobs-status-exit.mjs'], {
      cwd: ROOT,
      env: { ...process.env, REDIS_URL: server.url, PREFIX: 'http-exit-test' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    let stoppedAt = 0;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!stoppedAt && out.includes('stopped')) stoppedAt = Date.now();
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    clearTimeout(timer);
    assert.equal(code, 0, `exit code; stderr: ${err}`);
    assert.match(out, /^port \d+\nstopped\n$/);
    assert.ok(Date.now() - stoppedAt < 2_000, 'exited right after stop');
  });
});
