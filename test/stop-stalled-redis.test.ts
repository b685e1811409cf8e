/**
 * A stalled Redis cannot hold a stopping node (SPEC 3.6): with redis-server frozen (SIGSTOP),
 * SIGTERM ends the node within the grace plus 5 s; every connection's close, the stats flush and
 * the lease release are bounded, and the stats it could not write are logged once with their
 * count. A real node, a real redis-server frozen by the test.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnLeasehold } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const GRACE_MS = 1_000;

test('SIGTERM with Redis frozen: the node exits within the grace plus 5 s and says once how many stats it could not write', { timeout: 60_000 }, async () => {
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-stall.mjs', '--port', '0'], {
    REDIS_URL: redis.url,
    LEASEHOLD_PREFIX: 'stall-stop',
    LEASEHOLD_SHUTDOWN_GRACE: `${GRACE_MS}ms`,
  });
  await node.waitFor((l) => l['jobId'] === 'holder' && l['msg'] === 'run started');
  await sleep(500);
  redis.pause();
  let exitedIn = Infinity;
  try {
    // Runs end meanwhile: their stats cannot be written.
    await sleep(800);
    const t0 = Date.now();
    node.kill('SIGTERM');
    const { code } = await Promise.race([node.exited, sleep(GRACE_MS + 20_000, undefined, { ref: false }).then(() => ({ code: null }))]);
    exitedIn = Date.now() - t0;
    assert.equal(code, 0, node.stderr());
  } finally {
    redis.resume();
  }
  assert.ok(exitedIn <= GRACE_MS + 5_000, `exited ${exitedIn} ms after SIGTERM`);
  const unwritten = node.lines.filter((l) => typeof l['unwrittenRuns'] === 'number');
  assert.equal(unwritten.length, 1, `one line about the stats left unwritten: ${JSON.stringify(unwritten)}`);
  assert.ok(Number(unwritten[0]?.['unwrittenRuns']) > 0, JSON.stringify(unwritten[0]));
  assert.match(String(unwritten[0]?.['msg']), /\d+ run\(s\) of \d+ job\(s\)/);
  assert.ok(node.lines.some((l) => l['jobId'] === 'holder' && l['outcome'] === 'interrupted'), 'the run in progress is interrupted');
});
