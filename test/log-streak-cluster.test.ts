/**
 * The first failure and the recovery of an installation job are logged once for the whole
 * installation (SPEC 3.5): its ticks move between nodes, so the streak that decides is the
 * cluster's (the stats hash's), not each node's. Three real nodes share a job that fails for
 * a while: one "failed" line and one "recovered" line in all three logs together.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { keys as keyNames } from '../src/redis/keys.js';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { until } from './helpers/wait.js';

const PREFIX = 'streak-cluster';
const k = keyNames(PREFIX);

describe('an installation job failing for a while on three nodes', () => {
  let server: TestRedis;
  let cli: Redis;
  const failFile = join(mkdtempSync(join(tmpdir(), 'leasehold-streak-')), 'failing');
  const nodes: NodeProc[] = [];

  before(async () => {
    server = await startRedis();
    cli = server.client();
    for (const id of ['node-a', 'node-b', 'node-c']) {
      const proc = spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-edges.mjs', '--port', '0', '--host', '127.0.0.1'], {
        REDIS_URL: server.url,
        LEASEHOLD_PREFIX: PREFIX,
        LEASEHOLD_INSTANCE_ID: id,
        LEASEHOLD_SHUTDOWN_GRACE: '1s',
        LOG_LEVEL: 'info',
        ONLY_JOBS: 'flaky',
        FAIL_FILE: failFile,
      });
      await proc.waitFor((l) => String(l['msg']).startsWith('HTTP listening'), 20_000);
      nodes.push(proc);
    }
  });
  after(async () => {
    for (const n of nodes) if (n.child.exitCode === null) n.kill('SIGKILL');
    await server.stop();
  });

  const count = async (field: string): Promise<number> => Number((await cli.hget(k.stats('flaky'), field)) ?? 0);
  /** The nodes that ran the job's recent failed runs. */
  const failedOn = async (): Promise<Set<string>> =>
    new Set((await cli.lrange(k.runs('flaky'), 0, -1)).map((r) => JSON.parse(r) as { outcome: string; instance: string }).filter((r) => r.outcome === 'failed').map((r) => r.instance));

  it('logs one "failed" line and one "recovered" line in the whole installation', async () => {
    await until('a first success', async () => (await count('succeeded')) >= 2, 15_000);
    writeFileSync(failFile, 'down');
    await until('six failures', async () => (await count('failed')) >= 6, 20_000);
    // A node that joined is ranked by the others from their next heartbeat (within 5 s), and the
    // ranking of a few ticks may still favour one node: the streak must have crossed nodes.
    await until('failures on two nodes', async () => (await failedOn()).size >= 2, 20_000);
    rmSync(failFile);
    const succeeded = await count('succeeded');
    await until('three successes after the failures', async () => (await count('succeeded')) >= succeeded + 3, 20_000);
    for (const n of nodes) n.kill('SIGTERM');
    for (const n of nodes) assert.equal((await n.exited).code, 0);

    const failedRuns = await failedOn();
    assert.ok(failedRuns.size >= 2, `the failing ticks ran on more than one node (${[...failedRuns].join(', ')})`);
    const lines = nodes.flatMap((n) => n.lines.filter((l) => l['jobId'] === 'flaky'));
    const failed = lines.filter((l) => /^job "flaky" failed: flaky is down$/.test(String(l['msg'])));
    const recovered = lines.filter((l) => /^job "flaky" recovered after \d+ unsuccessful runs?$/.test(String(l['msg'])));
    assert.equal(failed.length, 1, `one "failed" line: ${JSON.stringify(failed)}`);
    assert.equal(failed[0]?.['level'], 40, 'a warning');
    assert.equal(recovered.length, 1, `one "recovered" line: ${JSON.stringify(recovered)}`);
    assert.equal(recovered[0]?.['level'], 30, 'an info line');
    assert.equal(recovered[0]?.['failedRuns'], await count('failed'), 'it counts the installation\'s unsuccessful runs');
  });
});
