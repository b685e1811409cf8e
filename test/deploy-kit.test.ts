/**
 * The deploy kit run rather than parsed (SPEC 7, docs/guide/deployment.md): the topology of
 * docker-compose.yml without Docker. A redis-server, three real `leasehold start` nodes, Debian's
 * nginx with the shipped infra/nginx/nginx.conf and Debian's Prometheus with the shipped
 * infra/prometheus/prometheus.yml and alerts.yml. Only host names and ports are substituted (and
 * the paths an unprivileged nginx needs, a short scrape interval and the failing-job alert's
 * `for`), so a change to the shipped files is what runs here. Everything listens on 127.0.0.1.
 *
 * Needs `npm run build` (the nodes run bin/leasehold.js) and the Debian packages nginx and
 * prometheus. Without them the test is skipped, unless CI is set: then it fails.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, openSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ROOT, list, obj, read } from './helpers/infra.js';
import { spawnLeasehold, type NodeProc } from './helpers/node.js';
import { freePort, startRedis, type TestRedis } from './helpers/redis.js';

// ---- the tools -------------------------------------------------------------------------

/** The path of an executable on PATH or in the sbin directories Debian puts daemons in. */
function which(name: string): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/local/sbin', '/usr/sbin', '/sbin'];
  for (const dir of dirs.filter(Boolean)) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not in this directory; try the next
    }
  }
  return undefined;
}

const NGINX = which('nginx');
const PROMETHEUS = which('prometheus');
const missing = [NGINX ? undefined : 'nginx', PROMETHEUS ? undefined : 'prometheus'].filter((t): t is string => t !== undefined);
const inCi = (process.env['CI'] ?? '') !== '';
const skip = missing.length > 0 && !inCi ? `${missing.join(' and ')} not installed (Debian packages nginx, prometheus); CI is not set` : false;

// ---- substitutions into the shipped files ----------------------------------------------

/** `text` with the one match of `pattern` replaced; fails when the shipped file no longer has exactly one. */
function replaceOnce(text: string, pattern: RegExp, by: (m: RegExpExecArray) => string, what: string): string {
  const all = [...text.matchAll(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`))];
  assert.equal(all.length, 1, `the shipped file has one ${what}`);
  const m = pattern.exec(text);
  assert.ok(m);
  return text.slice(0, m.index) + by(m) + text.slice(m.index + m[0].length);
}

/**
 * infra/nginx/nginx.conf for nginx on this machine: the upstream `node:<port>` (every replica,
 * through Docker's DNS) becomes one server line per node, keeping the line's parameters except
 * `resolve` (there is no name left to resolve); the listen port becomes a loopback port; the
 * temporary files go under `dir`, as a process without root cannot write /var/lib/nginx.
 */
function nginxConf(shipped: string, nodes: readonly string[], listen: string, dir: string): string {
  let conf = replaceOnce(
    shipped,
    /^([ \t]*)server[ \t]+node:\d+((?:[ \t]+[^;\s]+)*)[ \t]*;/m,
    (m) => {
      const params = (m[2] ?? '').split(/\s+/).filter((p) => p !== '' && p !== 'resolve');
      return nodes.map((n) => `${m[1] ?? ''}server ${[n, ...params].join(' ')};`).join('\n');
    },
    'upstream server node:<port>',
  );
  conf = replaceOnce(conf, /^([ \t]*)listen[ \t]+\d+[ \t]*;/m, (m) => `${m[1] ?? ''}listen ${listen};`, 'listen <port>');
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `    ${k}_temp_path ${join(dir, 'temp', k)};`).join('\n');
  return replaceOnce(conf, /^http[ \t]*\{[ \t]*$/m, (m) => `${m[0]}\n${temp}`, 'http block');
}

/** The shortened `for` of the failing-job alert, so it fires within the test. */
const FAILING_FOR = '2s';

/**
 * infra/prometheus/prometheus.yml for Prometheus on this machine: the leasehold scrape job's
 * Docker DNS discovery (`node`, every replica) becomes the three nodes' addresses, Prometheus
 * scrapes itself on its own port, and scrapes and rule evaluations happen every second.
 */
function prometheusConfig(shipped: string, nodes: readonly string[], self: string): string {
  const config = obj(parseYaml(shipped), 'prometheus.yml');
  const global = obj(config['global'], 'global');
  global['scrape_interval'] = '1s';
  global['evaluation_interval'] = '1s';
  const jobs = list(config['scrape_configs'], 'scrape_configs');
  const leasehold = jobs.find((j) => j['job_name'] === 'leasehold');
  assert.ok(leasehold && Array.isArray(leasehold['dns_sd_configs']), 'the leasehold scrape job discovers the nodes through DNS');
  delete leasehold['dns_sd_configs'];
  leasehold['static_configs'] = [{ targets: [...nodes] }];
  const prometheus = jobs.find((j) => j['job_name'] === 'prometheus');
  assert.deepEqual(prometheus?.['static_configs'], [{ targets: ['localhost:9090'] }], 'Prometheus scrapes itself');
  if (prometheus) prometheus['static_configs'] = [{ targets: [self] }];
  return stringifyYaml(config);
}

/** infra/prometheus/alerts.yml with the failing-job alert's `for` shortened; every other rule as shipped. */
function alertRules(shipped: string): string {
  const rules = obj(parseYaml(shipped), 'alerts.yml');
  const failing = list(rules['groups'], 'groups')
    .flatMap((g) => list(g['rules'], 'rules'))
    .filter((r) => /\bleasehold_job_failing_streak\b/.test(String(r['expr'])));
  assert.equal(failing.length, 1, 'one alert on the failing streak');
  const [rule] = failing;
  assert.ok(rule);
  rule['for'] = FAILING_FOR;
  return stringifyYaml(rules);
}

/**
 * The command of infra/Dockerfile's HEALTHCHECK (exec form), as it runs in the image's /app:
 * here from the repository root, with this machine's node.
 */
function healthcheckCommand(dockerfile: string): string[] {
  const joined = dockerfile.replace(/\\\n/g, ' ');
  const m = /^HEALTHCHECK\s.*?\bCMD\s+(\[.*\])\s*$/m.exec(joined);
  assert.ok(m, 'the Dockerfile has a HEALTHCHECK with an exec-form CMD');
  const command = JSON.parse(m[1] ?? '[]') as string[];
  assert.equal(command[0], 'node');
  return [process.execPath, ...command.slice(1)];
}

// ---- processes -------------------------------------------------------------------------

/** A daemon of this test: its own process group, so nginx's workers go with its master. */
interface Daemon {
  readonly name: string;
  readonly child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

const daemons = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of daemons) {
    if (child.pid === undefined) continue;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch (err) {
      // ESRCH: the group is gone already.
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
});

// With setpriv the daemon is killed by the kernel should this process die without its exit hook.
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

function startDaemon(name: string, cmd: string, args: readonly string[], logFile: string): Daemon {
  const [file, argv] = SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', cmd, ...args]] : [cmd, [...args]];
  // A file, not a pipe: the shipped nginx.conf logs to /dev/stdout and /dev/stderr, which
  // cannot be opened when they are the sockets of a spawned process's pipes.
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(file, argv, { detached: true, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  daemons.add(child);
  const output = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-4000) : '');
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      daemons.delete(child);
      resolve();
    });
  });
  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  };
  return {
    name,
    child,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(5_000)]);
      }
      // The whole group, whatever the master left behind.
      signalGroup('SIGKILL');
      await Promise.race([exited, sleep(2_000)]);
    },
  };
}

/** Polls `f` every `every` ms until it answers something truthy; fails after `ms` with `why()`. */
async function until<T>(what: string, f: () => Promise<T | undefined | false>, ms: number, why: () => string = () => '', every = 200): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `; last error: ${String(last)}` : ''}\n${why()}`);
    await sleep(every);
  }
}

async function getJson<T>(url: string): Promise<{ status: number; node: string | null; body: T }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
  return { status: res.status, node: res.headers.get('x-leasehold-node'), body: (await res.json()) as T };
}

// ---- the test --------------------------------------------------------------------------

interface JobRow {
  id: string;
  runs: number;
  succeeded: number;
  failed: number;
  timedOut: number;
  lockLost: number;
  interrupted: number;
  overruns: number;
  missed: number;
  state: string;
}
/** The totals compared; not `skipped`, which keeps counting the ticks of a paused job. */
const COUNTERS = ['runs', 'succeeded', 'failed', 'timedOut', 'lockLost', 'interrupted', 'overruns', 'missed'] as const;
const totals = (jobs: readonly JobRow[]): Record<string, Record<string, number>> =>
  Object.fromEntries(jobs.map((j) => [j.id, Object.fromEntries(COUNTERS.map((c) => [c, j[c]]))]));

interface Target { labels: Record<string, string>; health: string; scrapeUrl: string; lastError: string }
interface Alert { labels: Record<string, string>; state: string }

const NODE_IDS = ['deploy-node-1', 'deploy-node-2', 'deploy-node-3'] as const;
const ADMIN_TOKEN = 'deploy-kit-admin-token-0123456789';

describe('the deploy kit, run on this machine', { skip, timeout: 60_000 }, () => {
  let dir = '';
  let redis: TestRedis | undefined;
  const nodes: NodeProc[] = [];
  const nodeAddrs: string[] = [];
  const running: Daemon[] = [];
  let lb = '';
  let prom = '';
  const logs = (): string => running.map((d) => `--- ${d.name}\n${d.output()}`).join('\n');

  before(async () => {
    assert.deepEqual(missing, [], `with CI set, the deploy kit test needs ${missing.join(' and ')} (Debian packages nginx, prometheus)`);
    dir = await mkdtemp(join(tmpdir(), 'leasehold-deploy-kit-'));
    // nginx started as root runs its workers as nobody: they must reach their temp directories.
    await chmod(dir, 0o755);
    redis = await startRedis();

    const redisUrl = redis.url;
    nodes.push(
      ...NODE_IDS.map((id) =>
        spawnLeasehold(['start', '--jobs', 'test/fixtures/jobs-deploy-kit.mjs'], {
          REDIS_URL: redisUrl,
          LEASEHOLD_PREFIX: 'deploy-kit',
          LEASEHOLD_INSTANCE_ID: id,
          LEASEHOLD_ADMIN_TOKEN: ADMIN_TOKEN,
          LEASEHOLD_SHUTDOWN_GRACE: '1s',
          HOST: '127.0.0.1',
          PORT: '0',
          LOG_LEVEL: 'info',
        }),
      ),
    );
    for (const node of nodes) {
      const listening = await node.waitFor((l) => typeof l['port'] === 'number', 20_000);
      nodeAddrs.push(`127.0.0.1:${Number(listening['port'])}`);
    }

    const nginxPort = await freePort();
    lb = `http://127.0.0.1:${nginxPort}`;
    await mkdir(join(dir, 'nginx', 'temp'), { recursive: true });
    const nginxConfPath = join(dir, 'nginx', 'nginx.conf');
    await writeFile(nginxConfPath, nginxConf(read('infra/nginx/nginx.conf'), nodeAddrs, `127.0.0.1:${nginxPort}`, join(dir, 'nginx')));
    running.push(
      startDaemon('nginx', NGINX ?? 'nginx', [
        '-p', `${join(dir, 'nginx')}/`,
        '-c', nginxConfPath,
        '-e', join(dir, 'nginx', 'error.log'),
        '-g', `daemon off; pid ${join(dir, 'nginx', 'nginx.pid')};`,
      ], join(dir, 'nginx', 'output.log')),
    );

    const promPort = await freePort();
    prom = `http://127.0.0.1:${promPort}`;
    await mkdir(join(dir, 'prometheus', 'data'), { recursive: true });
    await writeFile(join(dir, 'prometheus', 'prometheus.yml'), prometheusConfig(read('infra/prometheus/prometheus.yml'), nodeAddrs, `127.0.0.1:${promPort}`));
    await writeFile(join(dir, 'prometheus', 'alerts.yml'), alertRules(read('infra/prometheus/alerts.yml')));
    running.push(
      startDaemon('prometheus', PROMETHEUS ?? 'prometheus', [
        `--config.file=${join(dir, 'prometheus', 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'prometheus', 'data')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
        '--log.level=warn',
      ], join(dir, 'prometheus', 'output.log')),
    );

    await until('nginx to answer', async () => (await fetch(`${lb}/nginx-health`)).ok, 10_000, logs);
    await until('Prometheus to be ready', async () => (await fetch(`${prom}/-/ready`)).ok, 20_000, logs);
  });

  after(async () => {
    const stops = [...running.map((d) => d.stop()), ...nodes.map(async (n) => {
      n.kill('SIGKILL');
      await n.exited;
    })];
    await Promise.allSettled(stops);
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('spreads requests through nginx over all three nodes, each naming itself in X-Leasehold-Node', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 30 && seen.size < NODE_IDS.length; i++) {
      const res = await getJson<{ jobs: JobRow[] }>(`${lb}/manage/jobs`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.jobs.map((j) => j.id), ['always-fails', 'heartbeat']);
      assert.ok(res.node, 'the answer names its node');
      seen.add(res.node);
    }
    assert.deepEqual([...seen].sort(), [...NODE_IDS], logs());
  });

  it('has Prometheus scrape all three nodes with the shipped scrape job', async () => {
    const targets = await until(
      'three leasehold targets up',
      async () => {
        const res = await getJson<{ data: { activeTargets: Target[] } }>(`${prom}/api/v1/targets?state=active`);
        const mine = res.body.data.activeTargets.filter((t) => t.labels['job'] === 'leasehold');
        return mine.length === 3 && mine.every((t) => t.health === 'up') && mine;
      },
      20_000,
      logs,
    );
    assert.deepEqual(targets.map((t) => t.labels['instance']).sort(), [...nodeAddrs].sort());
    for (const t of targets) assert.match(t.scrapeUrl, /\/metrics$/);
  });

  it('fires the shipped failing-job alert for the job that fails every run', async () => {
    const firing = await until(
      'LeaseholdJobFailing to fire',
      async () => {
        const res = await getJson<{ data: { alerts: Alert[] } }>(`${prom}/api/v1/alerts`);
        return res.body.data.alerts.find((a) => a.labels['alertname'] === 'LeaseholdJobFailing' && a.state === 'firing');
      },
      30_000,
      logs,
    );
    assert.equal(firing.labels['job'], 'always-fails', 'by the leasehold job id (honor_labels keeps it)');
    assert.equal(firing.labels['severity'], 'critical');
    const res = await getJson<{ data: { alerts: Alert[] } }>(`${prom}/api/v1/alerts`);
    const others = res.body.data.alerts.filter((a) => a.labels['alertname'] === 'LeaseholdJobFailing' && a.labels['job'] !== 'always-fails');
    assert.deepEqual(others, [], 'the job that succeeds does not alert');
  });

  it('keeps every node healthy for the image\'s HEALTHCHECK although a job keeps failing, which /health reports', async () => {
    const [cmd, ...args] = healthcheckCommand(read('infra/Dockerfile'));
    for (const [i, addr] of nodeAddrs.entries()) {
      const health = await getJson<{ reasons: Array<{ check: string; jobId?: string }> }>(`http://${addr}/health`);
      assert.equal(health.status, 503, `${NODE_IDS[i]}: /health reports the degraded job`);
      assert.deepEqual(health.body.reasons.map((r) => `${r.check} ${r.jobId ?? ''}`), ['job always-fails'], JSON.stringify(health.body));
      const port = addr.split(':')[1] ?? '';
      const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(cmd ?? process.execPath, args, { cwd: ROOT, env: { ...process.env, PORT: port }, timeout: 10_000 }, (err, _out, stderr) => {
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr });
        });
      });
      assert.equal(result.code, 0, `${NODE_IDS[i]}: ${result.stderr}`);
    }
  });

  it('answers the same job totals from every node, directly and through nginx, once the jobs are paused through nginx', async () => {
    // Paused, the jobs stop running within a second and their totals settle; running, they
    // change every few hundred milliseconds and four reads rarely land between two writes.
    for (const id of ['always-fails', 'heartbeat']) {
      const res = await fetch(`${lb}/manage/jobs/${id}/pause`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: AbortSignal.timeout(3_000) });
      assert.equal(res.status, 200, await res.text());
    }
    let previous = '';
    const answers = await until(
      'the totals to settle, equal on every node',
      async () => {
        const all = await Promise.all([...nodeAddrs.map((a) => getJson<{ jobs: JobRow[] }>(`http://${a}/manage/jobs`)), getJson<{ jobs: JobRow[] }>(`${lb}/manage/jobs`)]);
        const seen = all.map((a) => JSON.stringify(totals(a.body.jobs)));
        const equal = seen.every((t) => t === seen[0]);
        const settled = equal && seen[0] === previous && all.every((a) => a.body.jobs.every((j) => j.state === 'paused'));
        previous = equal ? (seen[0] ?? '') : '';
        return settled && all;
      },
      20_000,
      logs,
      1_500,
    );
    assert.deepEqual(answers.slice(0, 3).map((a) => a.node), [...NODE_IDS], 'each node answered for itself');
    const agreed = totals(answers[0]?.body.jobs ?? []);
    assert.ok((agreed['heartbeat']?.['succeeded'] ?? 0) >= 2, JSON.stringify(agreed));
    assert.equal(agreed['heartbeat']?.['failed'], 0);
    assert.ok((agreed['always-fails']?.['failed'] ?? 0) >= 3 * NODE_IDS.length, JSON.stringify(agreed));
    assert.equal(agreed['always-fails']?.['succeeded'], 0);
  });
});
