/**
 * docs/guide/getting-started.md, followed word for word in a new project: its shell lines run
 * in order in a temporary folder, its `jobs.ts` is written as shown, and what it says happens
 * does: the jobs run, the status answers (JSON and the page), a second node started against the
 * first one's Redis shares the work (the installation job's ticks each run once, the instance
 * job on both nodes), `leasehold status` lists both nodes, and Ctrl-C stops them.
 *
 * What the test changes, and only this: `npm install ../leasehold/leasehold-<version>.tgz`
 * installs the package packed from this repository (`npm pack`) into a temporary folder (its
 * dependencies come from the npm cache or the registry); the HTTP ports 3000 and 3001 become free ports; the Redis URL of the
 * second node and of `leasehold status` is the one the first node printed, as the page says.
 * `npm run build` first.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './helpers/redis.js';
import { until } from './helpers/wait.js';
import { ROOT } from './helpers/node.js';

const page = readFileSync(join(ROOT, 'docs', 'guide', 'getting-started.md'), 'utf8');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

/** The page's ```sh blocks, in order, as their command lines. */
const shell = [...page.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) =>
  (m[1] ?? '')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== ''),
);
/** The jobs module the page writes. */
const jobsModule = /^```ts\n(\/\/ jobs\.ts\n[\s\S]*?)^```$/m.exec(page)?.[1];

const quiet = { npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', NO_COLOR: '1' };

interface Started {
  readonly child: ChildProcess;
  readonly lines: Array<Record<string, unknown>>;
  /** Resolves once the line's output has ended: its command and the node it runs have exited. */
  readonly closed: Promise<void>;
  output(): string;
}

const started: Started[] = [];

/** Starts a long-running shell line in `cwd`, in a process group of its own; its stdout read as JSON log lines. */
function startLine(line: string, cwd: string, env: Record<string, string>): Started {
  // `exec`: the line's command leads the process group, as in a terminal (no shell in between);
  // its leading VAR=value words stay in front, where they reach the command's environment.
  const command = line.replace(/^((?:\w+=\S+\s+)*)/, '$1exec ');
  const child = spawn('sh', ['-c', command], { cwd, env: { ...process.env, ...quiet, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const lines: Array<Record<string, unknown>> = [];
  let out = '';
  let partial = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const p of parts.filter((x) => x.startsWith('{'))) lines.push(JSON.parse(p) as Record<string, unknown>);
  });
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const s = { child, lines, closed, output: () => out };
  started.push(s);
  return s;
}

/** Sends `signal` to the line's process group (npx and the node it runs); a group that has ended is left alone. */
function signalGroup(s: Started, signal: NodeJS.Signals): void {
  if (s.child.pid === undefined || s.child.exitCode !== null || s.child.signalCode !== null) return;
  try {
    process.kill(-s.child.pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // ESRCH: every process of the group has exited
  }
}

let work: string;
let tarball: string;
before(() => {
  work = mkdtempSync(join(tmpdir(), 'leasehold-getting-started-'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...quiet } })) as Array<{ filename: string }>;
  tarball = join(work, packed[0]?.filename ?? '');
});
after(async () => {
  for (const s of started) signalGroup(s, 'SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

test('the page has the steps the test follows', () => {
  assert.deepEqual(shell, [
    ['mkdir my-service && cd my-service', 'npm init -y', 'npm pkg set type=module', `npm install ../leasehold/leasehold-${version}.tgz tsx`],
    ['npx leasehold start --jobs jobs.ts --private-redis'],
    ['curl -s localhost:3000/manage/jobs'],
    ['REDIS_URL=redis://127.0.0.1:42279 npx leasehold start --jobs jobs.ts --port 3001'],
    ['REDIS_URL=redis://127.0.0.1:42279 npx leasehold status'],
  ]);
  assert.ok(jobsModule, 'the page shows jobs.ts');
  assert.match(page, /<http:\/\/localhost:3000\/manage\/ui>/, 'the page sends the reader to the status page');
});

test('from npm init to two nodes sharing their jobs, as the page says', { timeout: 300_000 }, async () => {
  const [setup = [], [first = ''] = [], [curl = ''] = [], [second = ''] = [], [status = ''] = []] = shell;

  // 1. A project with leasehold.
  const [mkdir = '', ...rest] = setup;
  execFileSync('sh', ['-c', mkdir], { cwd: work });
  const project = join(work, /&& cd (\S+)$/.exec(mkdir)?.[1] ?? '');
  for (const line of rest) {
    const command = line.replace(/^npm install \S+\.tgz/, `npm install --prefer-offline ${tarball}`);
    const out = spawnSync('sh', ['-c', command], { cwd: project, env: { ...process.env, ...quiet }, encoding: 'utf8' });
    assert.equal(out.status, 0, `${command}: ${out.stderr}`);
    // Node 20 is supported: nothing the install brings asks for a newer Node.
    assert.doesNotMatch(out.stderr, /EBADENGINE/, `${command}: ${out.stderr}`);
  }
  const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { type?: string; dependencies?: Record<string, string> };
  assert.equal(pkg.type, 'module');
  assert.ok(pkg.dependencies?.['leasehold'], 'leasehold is a dependency of the project');

  // 2. One file of jobs.
  writeFileSync(join(project, 'jobs.ts'), jobsModule ?? '');

  // 3. Run it: the default port 3000 is taken from PORT, which the flag falls back to.
  const port1 = await freePort();
  const node1 = startLine(first, project, { PORT: String(port1) });
  const ready = async (s: Started): Promise<Record<string, unknown>> => {
    await until('the node to say where its status is', () => s.lines.some((l) => typeof l['page'] === 'string') || s.child.exitCode !== null, 60_000);
    const line = s.lines.find((l) => typeof l['page'] === 'string');
    assert.ok(line, `the node did not start:\n${s.output()}`);
    return line;
  };
  const where = await ready(node1);
  const redisUrl = String(where['redis']);
  assert.match(redisUrl, /^redis:\/\/127\.0\.0\.1:\d+$/, 'it prints the URL of its private Redis');
  assert.equal(where['page'], `http://localhost:${port1}/manage/ui`);

  // 4. See it run: both jobs have run; the status answers as JSON and the page is served.
  const jobs = async (port: number): Promise<Array<{ id: string; runs: number; scope: string; instances?: Array<{ instanceId: string; runs: number }> }>> => {
    const out = execFileSync('sh', ['-c', curl.replace('localhost:3000', `localhost:${port}`)], { cwd: project, encoding: 'utf8' });
    return (JSON.parse(out) as { jobs: Array<{ id: string; runs: number; scope: string }> }).jobs;
  };
  await until('both jobs to have run', async () => (await jobs(port1)).every((j) => j.runs >= 1) && (await jobs(port1)).length === 2, 30_000);
  assert.deepEqual((await jobs(port1)).map((j) => `${j.id} ${j.scope}`).sort(), ['hello instance', 'report installation']);
  const ui = await fetch(`http://127.0.0.1:${port1}/manage/ui`);
  assert.equal(ui.status, 200);
  assert.match(await ui.text(), /<html/i);
  assert.ok(node1.lines.some((l) => l['msg'] === 'hello from every node'), 'the job logs its line');

  // 5. A second node against the first one's Redis, on another port.
  const port2 = await freePort();
  const node2 = startLine(second.replace('redis://127.0.0.1:42279', redisUrl).replace('--port 3001', `--port ${port2}`), project, {});
  await ready(node2);
  const instanceIds = [node1, node2].map((s) => String(s.lines.find((l) => typeof l['instanceId'] === 'string')?.['instanceId']));
  // hello runs on both nodes; both nodes answer the same status.
  await until('hello to run on both nodes', async () => {
    const hello = (await jobs(port2)).find((j) => j.id === 'hello');
    return instanceIds.every((id) => (hello?.instances ?? []).some((r) => r.instanceId === id && r.runs >= 1));
  }, 30_000);
  // report: each tick runs once, whichever node wins it.
  const before = (await jobs(port1)).find((j) => j.id === 'report')?.runs ?? 0;
  await until('report to run twice more with two nodes', async () => ((await jobs(port1)).find((j) => j.id === 'report')?.runs ?? 0) >= before + 2, 40_000);
  const detail = (await (await fetch(`http://127.0.0.1:${port2}/manage/jobs/report`)).json()) as { recentRuns: Array<{ scheduledAt: string }> };
  const ticks = detail.recentRuns.map((r) => r.scheduledAt);
  assert.equal(new Set(ticks).size, ticks.length, `each tick of report ran once: ${ticks.join(', ')}`);

  // leasehold status, against the first node's Redis, lists both nodes and both jobs.
  const table = execFileSync('sh', ['-c', status.replace('redis://127.0.0.1:42279', redisUrl)], { cwd: project, encoding: 'utf8', env: { ...process.env, ...quiet } });
  for (const id of [...instanceIds, 'hello', 'report']) assert.ok(table.includes(id), `leasehold status shows ${id}:\n${table}`);

  // Ctrl-C (SIGINT to the terminal's process group) stops each node, the second first, as the page
  // says: npx ends on the signal, and the node shuts down and exits.
  for (const node of [node2, node1]) {
    signalGroup(node, 'SIGINT');
    await node.closed;
    assert.ok(node.lines.some((l) => l['msg'] === 'leasehold runner stopped'), `the node stopped as on a shutdown:\n${node.output().slice(-2000)}`);
  }
});
