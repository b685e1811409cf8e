/**
 * The redis-cli recipes of docs/guide/redis-control.md work as printed against a node running the example jobs
 * (`npm start`'s jobs): every line of the block exits 0, and the pause, resume and reschedule
 * lines do what they say.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT, spawnLeasehold } from './helpers/node.js';
import { startRedis } from './helpers/redis.js';

const run = promisify(execFile);

function recipes(): string[] {
  const page = readFileSync(`${ROOT}docs/guide/redis-control.md`, 'utf8');
  const section = page.slice(page.indexOf('## Recipes'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block.split('\n').filter((l) => l.startsWith('redis-cli '));
}

test('every redis-cli line of the docs\' recipes runs against a node with the example jobs', async () => {
  const lines = recipes();
  assert.ok(lines.length >= 10, `found ${lines.length} recipe lines`);
  for (const l of lines) assert.match(l, /^redis-cli -u "\$REDIS_URL" /, 'each recipe names the node\'s Redis');
  const redis = await startRedis();
  const node = spawnLeasehold(['start', '--jobs', 'examples/jobs.ts'], { REDIS_URL: redis.url, PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json' });
  try {
    const listening = await node.waitFor((l) => typeof l['port'] === 'number', 20_000);
    const status = async (id: string): Promise<{ state: string; schedule: { expression: string } }> => {
      const body = (await (await fetch(`http://127.0.0.1:${String(listening['port'])}/manage/jobs`)).json()) as { jobs: Array<{ id: string; state: string; schedule: { expression: string } }> };
      const job = body.jobs.find((j) => j.id === id);
      assert.ok(job, `job ${id} is listed`);
      return job;
    };
    await sleep(1_500);
    for (const line of lines) {
      const { stdout, stderr } = await run('sh', ['-c', line], { env: { ...process.env, REDIS_URL: redis.url } });
      assert.doesNotMatch(`${stdout}${stderr}`, /ERR|WRONGTYPE|Could not connect/, `${line}\n${stdout}${stderr}`);
      // The status is served from a snapshot at most a few seconds old.
      const eventually = async (want: (state: string) => boolean): Promise<void> => {
        for (let i = 0; i < 40 && !want((await status('digest')).state); i++) await sleep(100);
        assert.ok(want((await status('digest')).state), line);
      };
      if (line.includes('digest.paused true')) await eventually((s) => s === 'paused');
      if (line.includes('digest.paused false')) await eventually((s) => s !== 'paused');
    }
    const { stdout } = await run('redis-cli', ['-u', redis.url, 'HGETALL', 'leasehold:settings']);
    assert.doesNotMatch(stdout, /cron|fixedRate/, 'the last line takes the reschedules back');
  } finally {
    node.kill('SIGTERM');
    await node.exited;
    await redis.stop();
  }
});
