/**
 * The MCP tools driven by the SDK's own client against real nodes: over Streamable HTTP at
 * `/mcp` of a node (admin token as a Bearer token for the tools that change jobs) and over
 * stdio through `leasehold mcp`. A run_job shows in the job's stats hash, a pause_job in the
 * settings hash; without the admin token, or under --read-only, they are refused and say why.
 * Runs the built CLI (`npm run build` first).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import Fastify from 'fastify';
import { createRunner, defineJob, defineTask, type ExecutorStats } from '../src/index.js';
import { keys } from '../src/redis/keys.js';
import { memoryLogger } from './helpers/log.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { BIN, ROOT, runLeasehold, spawnLeasehold, type NodeProc } from './helpers/node.js';
import { until } from './helpers/wait.js';

const PREFIX = 'mcp';
const TOKEN = 'mcp-admin-token-0123456789';
let redis: TestRedis;
let nodes: NodeProc[] = [];
let bases: string[] = [];

before(async () => {
  redis = await startRedis();
  // Two nodes: the first with an admin token, the second without one.
  nodes = [TOKEN, undefined].map((token, i) =>
    spawnLeasehold(['start', '--jobs', 'test/fixtures/decorated/jobs.ts', '--port', '0'], {
      REDIS_URL: redis.url,
      LEASEHOLD_PREFIX: PREFIX,
      LEASEHOLD_INSTANCE_ID: `m${i}`,
      LEASEHOLD_ADMIN_TOKEN: token,
      LOG_LEVEL: 'info',
      LEASEHOLD_SHUTDOWN_GRACE: '1s',
    }),
  );
  const lines = await Promise.all(nodes.map((n) => n.waitFor((l) => typeof l['url'] === 'string', 20_000)));
  bases = lines.map((l) => new URL(String(l['url'])).origin);
});
after(async () => {
  for (const n of nodes) n.kill('SIGTERM');
  await Promise.all(nodes.map((n) => n.exited));
  await redis.stop();
});

interface ToolAnswer {
  readonly text: string;
  readonly isError: boolean;
}

async function connect(transport: Transport): Promise<{ call(name: string, args?: Record<string, unknown>): Promise<ToolAnswer>; tools(): Promise<string[]>; close(): Promise<void> }> {
  const client = new Client({ name: 'leasehold-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    async call(name, args = {}) {
      const r = await client.callTool({ name, arguments: args });
      const content = r.content as Array<{ type: string; text?: string }>;
      return { text: content.map((c) => c.text ?? '').join('\n'), isError: r.isError === true };
    },
    tools: async () => (await client.listTools()).tools.map((t) => t.name).sort(),
    close: () => client.close(),
  };
}

const http = (base: string, token?: string): StreamableHTTPClientTransport =>
  new StreamableHTTPClientTransport(new URL('/mcp', base), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});

const stdio = (extraArgs: string[] = [], env: Record<string, string> = {}): StdioClientTransport =>
  new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--prefix', PREFIX, ...extraArgs],
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', REDIS_URL: redis.url, LOG_LEVEL: 'warn', ...env },
    stderr: 'pipe',
  });

async function statsRuns(jobId: string): Promise<number> {
  return Number((await redis.client().hget(keys(PREFIX).stats(jobId), 'runs')) ?? 0);
}

test('over HTTP: list_jobs shows the decorated names, run_job runs once (stats hash), pause_job writes the settings hash; the tools that change jobs need the admin token', async () => {
  const [withToken, withoutToken] = bases;
  assert.ok(withToken && withoutToken);
  const admin = await connect(http(withToken, TOKEN));
  try {
    assert.deepEqual(await admin.tools(), ['cancel_run', 'get_job', 'list_executors', 'list_jobs', 'pause_job', 'preview_schedule', 'resume_job', 'run_job']);
    const list = JSON.parse((await admin.call('list_jobs')).text) as { jobs: Array<{ id: string; scope: string }> };
    assert.deepEqual(list.jobs.map((j) => j.id).sort(), ['Digest.send', 'billing.cleanup.Cleanup.purge', 'plain', 'reports-archive', 'reports.cleanup.Cleanup.purge']);

    const before = await statsRuns('plain');
    const ran = await admin.call('run_job', { id: 'plain' });
    assert.equal(ran.isError, false, ran.text);
    await until('the manual run counted in the stats hash', async () => (await statsRuns('plain')) >= before + 2, 8_000);

    const paused = await admin.call('pause_job', { id: 'Digest.send' });
    assert.equal(paused.isError, false, paused.text);
    assert.equal(await redis.client().hget(keys(PREFIX).settings, 'Digest.send.paused'), 'true');
    const detail = JSON.parse((await admin.call('get_job', { id: 'Digest.send' })).text) as { id: string; recentRuns: unknown[] };
    assert.equal(detail.id, 'Digest.send');
    assert.ok(Array.isArray(detail.recentRuns));
    assert.equal((await admin.call('resume_job', { id: 'Digest.send' })).isError, false);
    assert.equal(await redis.client().hget(keys(PREFIX).settings, 'Digest.send.paused'), 'false');

    const unknown = await admin.call('get_job', { id: 'nope' });
    assert.equal(unknown.isError, true);
    assert.match(unknown.text, /unknown job "nope"/);
    const badId = await admin.call('run_job', { id: 'not a job id' });
    assert.equal(badId.isError, true);
    assert.match(badId.text, /a job id is 1 to 128 letters/);
  } finally {
    await admin.close();
  }

  const anonymous = await connect(http(withToken));
  try {
    assert.equal((await anonymous.call('list_jobs')).isError, false, 'reads are open without a read token');
    const refused = await anonymous.call('pause_job', { id: 'plain' });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /pause_job refused: the tools that change jobs need the admin token: send Authorization: Bearer/);
    assert.equal(await redis.client().hget(keys(PREFIX).settings, 'plain.paused'), null, 'nothing written');
  } finally {
    await anonymous.close();
  }

  const noAdmin = await connect(http(withoutToken, TOKEN));
  try {
    const refused = await noAdmin.call('run_job', { id: 'plain' });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /run_job refused: no admin token is configured on this node \(LEASEHOLD_ADMIN_TOKEN\)/);
  } finally {
    await noAdmin.close();
  }
});

test('over stdio (leasehold mcp): the same tools against the same Redis, check_jobs, preview_schedule with the DST rules; --read-only and no admin token refuse the changes', async () => {
  const agent = await connect(stdio([], { LEASEHOLD_ADMIN_TOKEN: TOKEN }));
  try {
    assert.deepEqual(await agent.tools(), ['cancel_run', 'check_jobs', 'get_job', 'list_executors', 'list_jobs', 'pause_job', 'preview_schedule', 'resume_job', 'run_job']);
    const list = JSON.parse((await agent.call('list_jobs')).text) as { jobs: Array<{ id: string }> };
    assert.ok(list.jobs.some((j) => j.id === 'reports.cleanup.Cleanup.purge'));

    const before = await statsRuns('reports-archive');
    assert.equal((await agent.call('run_job', { id: 'reports-archive' })).isError, false);
    await until('the run asked over stdio counted in the stats hash', async () => (await statsRuns('reports-archive')) > before, 8_000);

    assert.equal((await agent.call('pause_job', { id: 'plain' })).isError, false);
    assert.equal(await redis.client().hget(keys(PREFIX).settings, 'plain.paused'), 'true');
    assert.equal((await agent.call('resume_job', { id: 'plain' })).isError, false);

    const cancel = await agent.call('cancel_run', { id: 'plain' });
    assert.equal(cancel.isError, true);
    assert.match(cancel.text, /job "plain" has no run in progress/);

    // SPEC's DST rules: 02:30 does not exist on 2026-03-08 in New York; 01:30 happens twice on 2026-11-01.
    const spring = JSON.parse((await agent.call('preview_schedule', { cron: '0 30 2 * * *', zone: 'America/New_York', from: '2026-03-07T00:00:00Z', count: 2 })).text) as { fires: string[]; dstRules: string };
    assert.deepEqual(spring.fires, ['2026-03-07T02:30:00-05:00', '2026-03-09T02:30:00-04:00']);
    assert.match(spring.dstRules, /does not fire that day/);
    const fall = JSON.parse((await agent.call('preview_schedule', { cron: '0 30 1 * * *', zone: 'America/New_York', from: '2026-10-31T12:00:00Z', count: 2 })).text) as { fires: string[] };
    assert.deepEqual(fall.fires, ['2026-11-01T01:30:00-04:00', '2026-11-02T01:30:00-05:00']);
    const badCron = await agent.call('preview_schedule', { cron: '0 0 25 * * *' });
    assert.equal(badCron.isError, true);
    assert.match(badCron.text, /hour field "25"/);

    const bad = await agent.call('check_jobs', { path: 'test/fixtures/decorated-invalid.ts' });
    assert.equal(bad.isError, true);
    assert.match(bad.text, /job "TwoSchedules\.run": field "@Scheduled"/);
    assert.match(bad.text, /job "ZoneOnRate\.tick": field "zone"/);
    const good = await agent.call('check_jobs', { path: 'test/fixtures/decorated/jobs.ts' });
    assert.equal(good.isError, false, good.text);
    assert.match(good.text, /5 jobs ok/);
  } finally {
    await agent.close();
  }

  for (const [args, env, why] of [
    [['--read-only'], { LEASEHOLD_ADMIN_TOKEN: TOKEN }, /run_job refused: this MCP server runs with --read-only/],
    [[], {}, /run_job refused: no admin token is configured \(LEASEHOLD_ADMIN_TOKEN/],
  ] as const) {
    const limited = await connect(stdio([...args], { ...env }));
    try {
      const before = await statsRuns('plain');
      const r = await limited.call('run_job', { id: 'plain' });
      assert.equal(r.isError, true);
      assert.match(r.text, why);
      assert.equal((await limited.call('list_jobs')).isError, false);
      assert.equal(await statsRuns('plain'), before);
      if (args.length > 0) {
        // Loading a module runs its code: a server that must change nothing does not.
        const check = await limited.call('check_jobs', { path: 'test/fixtures/decorated/jobs.ts' });
        assert.equal(check.isError, true);
        assert.match(check.text, /check_jobs refused: this MCP server runs with --read-only/);
      }
    } finally {
      await limited.close();
    }
  }
});

test('over HTTP with a read token: /mcp answers 401 without it, and the read token alone reads but changes nothing', async () => {
  const runner = createRunner({ redisUrl: redis.url, prefix: PREFIX, instanceId: 'm-read', readToken: 'read-only-token-0123456789', adminToken: TOKEN, logger: memoryLogger('error').logger });
  const app = Fastify();
  await app.register(runner.routes);
  await runner.start();
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const bare = await fetch(`${address}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    assert.equal(bare.status, 401);
    assert.equal(bare.headers.get('www-authenticate'), 'Bearer');
    assert.equal(bare.headers.get('x-leasehold-node'), 'm-read');
    assert.match(JSON.stringify(await bare.json()), /reads need the read token/);
    const get = await fetch(`${address}/mcp`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('x-leasehold-node'), 'm-read');
    const listed = await fetch(`${address}/mcp`, { method: 'POST', headers: { authorization: 'Bearer read-only-token-0123456789', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } }) });
    assert.equal(listed.status, 200);
    assert.equal(listed.headers.get('x-leasehold-node'), 'm-read', 'the answering node is named on MCP answers too');
    const reader = await connect(http(address, 'read-only-token-0123456789'));
    try {
      assert.equal((await reader.call('list_jobs')).isError, false);
      const r = await reader.call('resume_job', { id: 'plain' });
      assert.equal(r.isError, true);
      assert.match(r.text, /resume_job refused: the tools that change jobs need the admin token, and the Bearer token sent is not it/);
    } finally {
      await reader.close();
    }
  } finally {
    await app.close();
    await runner.stop();
  }
});

test('list_executors, over HTTP from a node and over stdio from Redis: a row per node for a loop executor with its finished tasks, a queue executor with its counts', async () => {
  const runner = createRunner({
    redisUrl: redis.url,
    prefix: PREFIX,
    instanceId: 'm-exec',
    logger: memoryLogger('error').logger,
    shutdownGrace: '300ms',
    executors: { mail: { kind: 'loop', concurrency: 3 }, durable: { kind: 'queue', concurrency: 2 } },
  });
  const send = defineTask({ id: 'send-mail', executor: 'mail', run: (to: string) => `sent to ${to}` });
  const keep = defineTask({ id: 'keep', executor: 'durable', run: (n: number) => n + 1 });
  runner.addTask(keep);
  const app = Fastify();
  await app.register(runner.routes);
  await runner.start();
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    for (const to of ['a', 'b']) await (await runner.submit(send, to)).result();
    assert.equal(await (await runner.submit(keep, 1)).result(), 2);
    const overHttp = await connect(http(address));
    try {
      const { executors } = JSON.parse((await overHttp.call('list_executors')).text) as { executors: ExecutorStats[] };
      const mail = executors.find((e) => e.name === 'mail' && e.instanceId === 'm-exec');
      assert.deepEqual({ kind: mail?.kind, concurrency: mail?.concurrency, succeeded: mail?.succeeded, active: mail?.active }, { kind: 'loop', concurrency: 3, succeeded: 2, active: 0 });
      const durable = executors.find((e) => e.name === 'durable');
      assert.equal(durable?.kind, 'queue');
      assert.equal(durable?.succeeded, 1);
    } finally {
      await overHttp.close();
    }
    const agent = await connect(stdio());
    try {
      let rows: ExecutorStats[] = [];
      await until('the node\'s executors on the board in Redis', async () => {
        rows = (JSON.parse((await agent.call('list_executors')).text) as { executors: ExecutorStats[] }).executors;
        return rows.some((e) => e.name === 'mail' && e.instanceId === 'm-exec' && e.succeeded === 2);
      }, 10_000);
      assert.equal(rows.find((e) => e.name === 'durable')?.succeeded, 1, 'the queue counted from its queue');
    } finally {
      await agent.close();
    }
  } finally {
    await app.close();
    await runner.stop();
  }
});

test('over stdio, the admin token\'s value is checked, not only its presence: one a node would refuse stops leasehold mcp', async () => {
  for (const token of ['x', 'changeme', 'two words but long enough']) {
    const r = await runLeasehold(['mcp', '--prefix', PREFIX], { REDIS_URL: redis.url, LEASEHOLD_ADMIN_TOKEN: token });
    assert.equal(r.code, 2, `${token}: ${r.stderr}`);
    assert.match(r.stderr, /^leasehold mcp: LEASEHOLD_ADMIN_TOKEN: .*\(the value is not shown\)\n$/);
    if (token.length >= 8) assert.ok(!r.stderr.includes(token), 'the token is not shown');
  }
});

test('list_jobs pages: without arguments the first 100 of 1,200 jobs, total, nextCursor and how to read on; cursor, limit, state and q as GET /manage/jobs takes them', async () => {
  const runner = createRunner({ redisUrl: redis.url, prefix: 'mcp-many', instanceId: 'm-many', adminToken: TOKEN, logger: memoryLogger('error').logger });
  for (let i = 0; i < 1_200; i++) runner.add(defineJob({ id: `job-${String(i).padStart(4, '0')}`, description: i % 100 === 7 ? `Send the invoices ${i}` : `job ${i}`, cron: '0 0 3 * * *', run: async () => undefined }));
  const app = Fastify();
  await app.register(runner.routes);
  await runner.start();
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  interface Listed { total: number; jobs: Array<{ id: string; state: string }>; nextCursor: string | null; more?: string }
  const agent = await connect(http(address, TOKEN));
  try {
    const list = async (args: Record<string, unknown> = {}): Promise<Listed> => {
      const r = await agent.call('list_jobs', args);
      assert.equal(r.isError, false, r.text);
      return JSON.parse(r.text) as Listed;
    };
    await until('1,200 jobs in the status', async () => (await list({ limit: 1 })).total === 1_200, 30_000);
    const first = await list();
    assert.equal(first.total, 1_200);
    assert.deepEqual([first.jobs.length, first.jobs[0]?.id, first.jobs[99]?.id], [100, 'job-0000', 'job-0099']);
    assert.ok(first.nextCursor);
    assert.match(first.more ?? '', new RegExp(`^100 of 1200 jobs shown: call list_jobs with cursor "${first.nextCursor}"`));
    const second = await list({ cursor: first.nextCursor });
    assert.equal(second.jobs[0]?.id, 'job-0100');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const p: Listed = await list({ limit: 1_000, ...(cursor !== null ? { cursor } : {}) });
      seen.push(...p.jobs.map((j) => j.id));
      cursor = p.nextCursor;
    } while (cursor !== null);
    assert.equal(new Set(seen).size, 1_200, 'two pages of 1,000 reach every job once');
    // A snapshot read while the jobs were being written stays fresh for ten times its read time.
    await until('the descriptions in the status', async () => (await list({ q: 'INVOICES' })).total === 12, 60_000);
    const invoices = await list({ q: 'INVOICES' });
    assert.deepEqual([invoices.total, invoices.nextCursor, invoices.more], [12, null, undefined], JSON.stringify(invoices.jobs.map((j) => j.id)));
    assert.equal(invoices.jobs[0]?.id, 'job-0007');
    assert.equal((await agent.call('pause_job', { id: 'job-0042' })).isError, false);
    await until('job-0042 paused in the status', async () => (await list({ state: 'paused' })).total === 1, 10_000);
    assert.deepEqual((await list({ state: 'paused' })).jobs.map((j) => j.id), ['job-0042']);
    for (const [args, why] of [
      [{ limit: 1_001 }, /limit/],
      [{ state: 'sleeping' }, /state/],
      [{ cursor: '!!' }, /cursor: not a cursor this API gave/],
    ] as const) {
      const r = await agent.call('list_jobs', args);
      assert.equal(r.isError, true, JSON.stringify(args));
      assert.match(r.text, why);
    }
  } finally {
    await agent.close();
    await app.close();
    await runner.stop();
  }
});
