/**
 * The minimal Redis ACL a node needs (SPEC 7): the `ACL SETUSER` line documented in
 * `docs/reliability.md` ("Scale-out Redis, TLS and ACL") is applied as written, with this
 * test's password and key prefix, and a real node works under it: claims, counts, serves its
 * status, obeys pause and the control channel, shuts down; Redis logs no denied command. A
 * command outside it is refused.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createRedis, whenReady } from '../src/redis/connection.js';
import { keys as keyNames } from '../src/redis/keys.js';
import { pruneInstanceRows } from '../src/status/prune.js';
import { runLeasehold, spawnLeasehold } from './helpers/node.js';
import { startRedis, type TestRedis } from './helpers/redis.js';

const PREFIX = 'acl1';
const PASSWORD = 'acl-test-secret';
const TOKEN = 'acl-admin-token-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'leasehold-acl-'));
let server: TestRedis;
let admin: Redis;

/** The documented line, split into arguments, with this test's password and prefix. */
function documentedAcl(): string[] {
  const doc = readFileSync(new URL('../docs/reliability.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Scale-out Redis, TLS and ACL'));
  const line = section.split('\n').find((l) => l.startsWith('ACL SETUSER '));
  assert.ok(line, 'docs/reliability.md has the ACL SETUSER line in its scale-out section');
  return line
    .trim()
    .split(/\s+/)
    .slice(2)
    .map((a) => a.replace(/^>.*$/, `>${PASSWORD}`).replace(/^([~&])leasehold:\*$/, `$1${PREFIX}:*`));
}

before(async () => {
  server = await startRedis();
  admin = server.client();
  const args = documentedAcl();
  assert.equal(args[0], 'leasehold', 'the user is called leasehold');
  assert.equal(await admin.call('ACL', 'SETUSER', ...args), 'OK');
  await admin.call('ACL', 'LOG', 'RESET');
});
after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const url = (): string => `redis://leasehold:${PASSWORD}@127.0.0.1:${server.port}`;

test('a node runs under the documented ACL: claims, counts, status, pause, control channel, shutdown; no command is denied', async () => {
  const jobs = join(dir, 'jobs.mjs');
  writeFileSync(
    jobs,
    `export default [
  { id: 'once', scope: 'installation', fixedRate: '300ms', lease: '2s', run: async () => {} },
  { id: 'after', scope: 'installation', fixedDelay: '400ms', lease: '2s', run: async () => {} },
  { id: 'everywhere', fixedRate: '300ms', run: async () => {} },
  { id: 'broken', fixedRate: '500ms', run: async () => { throw new Error('on purpose'); } },
  { id: 'manual', fixedRate: '1h', initialDelay: '1h', run: async () => {} },
];
`,
  );
  const node = spawnLeasehold(['start', '--jobs', jobs, '--port', '0', '--host', '127.0.0.1'], {
    REDIS_URL: url(), LEASEHOLD_PREFIX: PREFIX, LEASEHOLD_INSTANCE_ID: 'acl-node', LEASEHOLD_ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'info',
  });
  let exit: { code: number | null } = { code: null };
  try {
    const listening = await node.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 15_000);
    const base = `http://127.0.0.1:${String(listening['port'])}`;
    const auth = { authorization: `Bearer ${TOKEN}` };
    type Status = { jobs: Array<{ id: string; succeeded: number; failed: number }>; instances: unknown[] };
    let status: Status = { jobs: [], instances: [] };
    let byId = new Map<string, Status['jobs'][number]>();
    const enough = (): boolean => ['once', 'after', 'everywhere'].every((id) => (byId.get(id)?.succeeded ?? 0) >= 2) && (byId.get('broken')?.failed ?? 0) >= 1;
    for (let i = 0; i < 50 && !enough(); i++) {
      await sleep(200);
      const jobsRes = await fetch(`${base}/manage/jobs`);
      assert.equal(jobsRes.status, 200);
      status = (await jobsRes.json()) as Status;
      byId = new Map(status.jobs.map((j) => [j.id, j]));
    }
    for (const id of ['once', 'after', 'everywhere']) assert.ok((byId.get(id)?.succeeded ?? 0) >= 2, `${id} ran and was counted`);
    assert.ok((byId.get('broken')?.failed ?? 0) >= 1);
    assert.equal(status.instances.length, 1, 'the heartbeat is written');
    assert.equal((await fetch(`${base}/manage/jobs/once`)).status, 200);
    assert.equal((await fetch(`${base}/health/ready`)).status, 200);
    assert.equal((await fetch(`${base}/metrics`)).status, 200);

    // Pause and resume (the settings hash and the control channel), and a run of an instance
    // job through the control channel (PUBLISH, and the node's subscription).
    assert.equal((await fetch(`${base}/manage/jobs/once/pause`, { method: 'POST', headers: auth })).status, 200);
    assert.equal((await fetch(`${base}/manage/jobs/once/resume`, { method: 'POST', headers: auth })).status, 200);
    assert.equal((await fetch(`${base}/manage/jobs/manual/run`, { method: 'POST', headers: auth })).status, 202);
    let manual = { succeeded: 0 };
    for (let i = 0; i < 40 && manual.succeeded < 1; i++) {
      await sleep(150);
      manual = (await (await fetch(`${base}/manage/jobs/manual`)).json()) as { succeeded: number };
    }
    assert.equal(manual.succeeded, 1, 'the control channel reached the node');

    // What runs every ten minutes: forgetting the rows of gone instances.
    const stats = createRedis({ url: url(), role: 'stats' });
    try {
      await whenReady(stats, 3_000);
      assert.equal(typeof (await pruneInstanceRows(stats, keyNames(PREFIX), ['everywhere'], Date.now())), 'number');
    } finally {
      stats.disconnect();
    }

    const cli = await runLeasehold(['status', '--json'], { REDIS_URL: url(), LEASEHOLD_PREFIX: PREFIX });
    assert.equal(cli.code, 0, cli.stderr);
  } finally {
    node.kill('SIGTERM');
    exit = await node.exited;
  }
  assert.equal(exit.code, 0);
  assert.ok(!node.stderr().includes('NOPERM'), node.stderr());
  const denied = (await admin.call('ACL', 'LOG')) as unknown[][];
  const entries = denied.map((e) => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i + 1 < e.length; i += 2) o[String(e[i])] = e[i + 1];
    return `${String(o['reason'])} ${String(o['object'])} (${String(o['context'])})`;
  });
  assert.deepEqual(entries, [], 'Redis denied none of the node\'s commands');
});

test('the ACL refuses what a node does not need: other keys, other channels, admin commands', async () => {
  const restricted = new Redis(url(), { maxRetriesPerRequest: 0, lazyConnect: false });
  restricted.on('error', () => undefined);
  try {
    assert.equal(await restricted.set(`${PREFIX}:{probe}:lease`, 'x', 'PX', 1_000), 'OK');
    await assert.rejects(restricted.get('other:key'), /NOPERM/);
    await assert.rejects(restricted.set(`${PREFIX}x:key`, '1'), /NOPERM/);
    await assert.rejects(restricted.publish('other:control', 'x'), /NOPERM/);
    await assert.rejects(restricted.flushall(), /NOPERM/);
    await assert.rejects(restricted.keys('*'), /NOPERM/);
    await assert.rejects(restricted.config('GET', 'dir'), /NOPERM/);
    await assert.rejects(restricted.call('ACL', 'WHOAMI'), /NOPERM/);
    await assert.rejects(restricted.call('SCRIPT', 'FLUSH'), /NOPERM/);
  } finally {
    restricted.disconnect();
  }
  // A node with another prefix gets nothing: leasehold status fails and says why.
  const other = await runLeasehold(['status'], { REDIS_URL: url(), LEASEHOLD_PREFIX: 'other' });
  assert.equal(other.code, 1);
  assert.match(other.stderr, /NOPERM/);
  assert.ok(!other.stderr.includes(PASSWORD));
});
