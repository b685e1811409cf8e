/**
 * The container image and the compose cluster (SPEC 7), checked by parsing: no Docker
 * needed. The Dockerfile, `.dockerignore`, the image's health check script, then
 * docker-compose.yml and the nginx configuration it mounts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { CONFIG } from '../src/cli/config.js';
import { readDuration } from '../src/schedule/duration.js';
import { ROOT, read, exists, isObj, obj, type Obj } from './helpers/infra.js';



/** Milliseconds of a Go duration as Docker writes them: `30s`, `1m30s`, `500ms`. */
function goDurationMs(text: string): number {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  assert.ok(parts.length > 0 && parts.map((p) => p[0]).join('') === text, `${JSON.stringify(text)} is a duration`);
  return parts.reduce((ms, p) => ms + Number(p[1]) * (units[p[2] ?? ''] ?? NaN), 0);
}

/** The node's setting of an environment variable, or its documented default. */
function settingDefault(env: string): string {
  const entry = CONFIG.find((e) => e.env === env);
  assert.ok(entry, `${env} is a setting of leasehold start`);
  return entry.default;
}
const CONFIG_ENV = new Set(CONFIG.flatMap((e) => (e.env ? [e.env] : [])));

// ---- Dockerfile ------------------------------------------------------------------------

interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}
interface Stage {
  readonly image: string;
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

/** Splits a Dockerfile into instructions (comments dropped, continuations joined) and stages. */
function parseDockerfile(text: string): { args: Map<string, string>; stages: Stage[] } {
  const instructions: Instruction[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!pending && (line === '' || line.startsWith('#'))) return;
    if (pending && line.startsWith('#')) return;
    if (!pending) start = i + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      return;
    }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\S+)\s*(.*)$/s.exec(full);
    if (m) instructions.push({ keyword: (m[1] ?? '').toUpperCase(), args: (m[2] ?? '').trim(), line: start });
  });
  assert.equal(pending, '', 'no dangling line continuation at the end');
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const m = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      assert.ok(m, `FROM on line ${ins.line} reads "FROM image [AS name]"`);
      const image = (m[1] ?? '').replace(/\$\{?(\w+)\}?/g, (_all, name: string) => args.get(name) ?? `$${name}`);
      stages.push({ image, name: m[2], instructions: [] });
    } else if (stages.length === 0) {
      assert.equal(ins.keyword, 'ARG', `only ARG comes before the first FROM (line ${ins.line})`);
      const m = /^(\w+)(?:=(.*))?$/.exec(ins.args);
      if (m) args.set(m[1] ?? '', (m[2] ?? '').replace(/^"(.*)"$/, '$1'));
    } else {
      stages[stages.length - 1]?.instructions.push(ins);
    }
  }
  return { args, stages };
}

/** The argument list of an exec-form (JSON array) instruction, or undefined for shell form. */
function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed: unknown = JSON.parse(args);
  assert.ok(Array.isArray(parsed) && parsed.every((a) => typeof a === 'string'), `${args} is a JSON array of strings`);
  return parsed as string[];
}

/** Sources and destination of a COPY, with its --from stage if any. */
function copyOf(ins: Instruction): { from: string | undefined; sources: string[]; dest: string } {
  const words = execForm(ins.args) ?? ins.args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
  assert.ok(paths.length >= 2, `COPY on line ${ins.line} has a source and a destination`);
  return { from, sources: paths.slice(0, -1), dest: paths[paths.length - 1] ?? '' };
}

const dockerfile = parseDockerfile(read('infra/Dockerfile'));
const finalStage = dockerfile.stages[dockerfile.stages.length - 1];
const lastOf = (stage: Stage | undefined, keyword: string): Instruction | undefined =>
  stage?.instructions.filter((i) => i.keyword === keyword).pop();

describe('infra/Dockerfile', () => {
  it('is multi-stage on Node 20', () => {
    assert.ok(dockerfile.stages.length >= 2, `stages: ${dockerfile.stages.length}`);
    for (const s of dockerfile.stages) assert.match(s.image, /^node:20([.-]|$)/, `stage ${s.name ?? '?'} is based on Node 20`);
  });

  it('builds dist/ in an earlier stage, with the dev dependencies', () => {
    const build = dockerfile.stages.slice(0, -1);
    const runs = build.flatMap((s) => s.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args));
    const ci = runs.find((r) => /\bnpm ci\b/.test(r));
    assert.ok(ci, 'a build stage runs npm ci');
    assert.doesNotMatch(ci, /--omit=dev|--production/, 'the build stage keeps the compiler');
    assert.ok(
      runs.some((r) => /\bnpm run build\b/.test(r)) || !/--ignore-scripts/.test(ci),
      'the build stage builds (npm run build, or the prepare script of npm ci)',
    );
  });

  it('installs production dependencies only in the final stage, without running prepare', () => {
    const installs = finalStage?.instructions.filter((i) => i.keyword === 'RUN' && /\bnpm (ci|install|i)\b/.test(i.args)) ?? [];
    assert.equal(installs.length, 1, 'one install in the final stage');
    const args = installs[0]?.args ?? '';
    assert.match(args, /\bnpm ci\b/);
    assert.match(args, /--omit=dev\b/);
    assert.match(args, /--ignore-scripts\b/, 'prepare would need the dev dependencies');
  });

  it('copies dist/ from the build stage and what the command needs from the context', () => {
    const copies = finalStage?.instructions.filter((i) => i.keyword === 'COPY').map(copyOf) ?? [];
    const buildNames = new Set(dockerfile.stages.slice(0, -1).map((s, i) => s.name ?? String(i)));
    const dist = copies.find((c) => c.from !== undefined && c.sources.some((s) => /(^|\/)dist\/?$/.test(s)));
    assert.ok(dist && buildNames.has(dist.from ?? ''), 'dist/ comes from a build stage');
    const fromContext = copies.filter((c) => c.from === undefined).flatMap((c) => c.sources);
    for (const needed of ['package.json', 'package-lock.json', 'bin', 'examples']) {
      assert.ok(fromContext.includes(needed), `the final stage copies ${needed}`);
    }
    for (const src of fromContext) assert.ok(exists(src), `${src} exists in the repository`);
  });

  it('runs as a non-root user', () => {
    const user = lastOf(finalStage, 'USER')?.args;
    assert.ok(user, 'the final stage sets USER');
    const name = user.split(':')[0];
    assert.ok(name !== 'root' && name !== '0', `USER ${user} is not root`);
    assert.match(name ?? '', /^[1-9]\d*$/, 'numeric, so Kubernetes can verify runAsNonRoot');
  });

  it('checks health with node on GET /health/ready (not /health, 503 for a degraded job), within the HEALTHCHECK timeout', () => {
    const hc = lastOf(finalStage, 'HEALTHCHECK');
    assert.ok(hc, 'HEALTHCHECK is set');
    const m = /^((?:--[\w-]+=\S+\s+)*)CMD\s+(.*)$/s.exec(hc.args);
    assert.ok(m, `HEALTHCHECK ${hc.args} has a CMD`);
    const command = execForm(m[2] ?? '');
    assert.ok(command, 'exec form: no shell, no curl needed');
    assert.equal(command[0], 'node');
    const script = command[1] ?? '';
    const copied = finalStage?.instructions.filter((i) => i.keyword === 'COPY').map(copyOf).find((c) => c.dest.endsWith(script));
    assert.ok(copied, `${script} is copied into the image`);
    const source = read(copied.sources[0] ?? '');
    assert.match(source, /['"]\/health\/ready['"]/, 'the script requests /health/ready');
    assert.doesNotMatch(source, /['"]\/health['"]/, 'not /health: one failing job would mark the container unhealthy');
    const timeout = /--timeout=(\S+)/.exec(m[1] ?? '')?.[1];
    assert.ok(timeout, 'HEALTHCHECK sets --timeout');
    const scriptTimeout = Number(/HEALTHCHECK_TIMEOUT_MS \|\| (\d+)/.exec(source)?.[1]);
    assert.ok(scriptTimeout > 0 && goDurationMs(timeout) > scriptTimeout, 'the script gives up (and says why) before Docker kills it');
  });

  it('starts node directly with the example jobs of npm start, so SIGTERM reaches it', (t: TestContext) => {
    assert.equal(lastOf(finalStage, 'STOPSIGNAL')?.args, 'SIGTERM');
    assert.equal(lastOf(finalStage, 'ENTRYPOINT'), undefined, 'no entrypoint wrapper');
    const cmd = execForm(lastOf(finalStage, 'CMD')?.args ?? '');
    assert.ok(cmd, 'CMD in exec form (a shell form would make sh PID 1)');
    assert.deepEqual(cmd.slice(0, 3), ['node', 'bin/leasehold.js', 'start']);
    assert.ok(exists('bin/leasehold.js'));
    const jobs = cmd[cmd.indexOf('--jobs') + 1] ?? '';
    const start = String(obj(obj(JSON.parse(read('package.json')), 'package.json')['scripts'], 'scripts')['start']);
    assert.equal(/--jobs\s+(\S+)/.exec(start)?.[1], jobs, 'the same module as npm start');
    if (!exists(jobs)) t.diagnostic(`${jobs} does not exist yet`);
  });

  it('loads the TypeScript jobs module of its command on Node 20: tsx, left out with the dev dependencies, is installed on its own at the version the lock pins', () => {
    const cmd = execForm(lastOf(finalStage, 'CMD')?.args ?? '') ?? [];
    assert.match(cmd[cmd.indexOf('--jobs') + 1] ?? '', /\.ts$/, 'the command runs a .ts jobs module');
    const lock = obj(obj(JSON.parse(read('package-lock.json')), 'package-lock.json')['packages'], 'packages');
    const tsx = obj(lock['node_modules/tsx'], 'the lock entry of tsx');
    assert.equal(tsx['dev'], true, 'tsx is a dev dependency, which npm ci --omit=dev leaves out');
    const runs = finalStage?.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args).join('\n') ?? '';
    const install = /npm install\b[^&;]*\btsx@(\S+)/.exec(runs);
    assert.ok(install, 'the final stage installs tsx');
    const pinned = install[1] === tsx['version'] || (/package-lock\.json/.test(runs) && /node_modules\/tsx/.test(runs));
    assert.ok(pinned, `tsx@${install[1] ?? ''} is the lock's ${String(tsx['version'])}, or read from the lock`);
    assert.match(runs, /ln -s \S+\/node_modules\/tsx node_modules\/tsx/, 'linked into /app/node_modules, where leasehold resolves its optional peers');
  });

  it('listens on every interface in the container, where leasehold start alone listens on 127.0.0.1', () => {
    assert.equal(settingDefault('HOST'), '127.0.0.1');
    const env = finalStage?.instructions.filter((i) => i.keyword === 'ENV').map((i) => i.args).join(' ') ?? '';
    assert.match(env, /(^|\s)HOST=0\.0\.0\.0(\s|$)/);
  });

  it('exposes the status port the node listens on', () => {
    const exposed = finalStage?.instructions.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(/\s+/)) ?? [];
    assert.deepEqual(exposed, [settingDefault('PORT')]);
  });
});

describe('.dockerignore', () => {
  const patterns = read('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const toRegExp = (p: string): RegExp =>
    new RegExp(`^${p.replace(/^\/+|\/+$/g, '').replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*/g, '\0').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\0/g, '.*')}$`);
  const ignored = (path: string): boolean => {
    const parts = path.replace(/^\.\/|\/$/g, '').split('/');
    return patterns.some((p) => !p.startsWith('!') && parts.some((_, i) => toRegExp(p).test(parts.slice(0, i + 1).join('/'))));
  };

  it('leaves out local state', () => {
    for (const path of ['node_modules', 'dist', '.git', 'bench/results', 'debug.log']) assert.ok(ignored(path), `${path} is ignored`);
  });

  it('keeps every file the Dockerfile copies from the context', () => {
    const sources = dockerfile.stages.flatMap((s) => s.instructions.filter((i) => i.keyword === 'COPY').map(copyOf).filter((c) => !c.from).flatMap((c) => c.sources));
    assert.ok(sources.length > 0);
    for (const src of sources) assert.ok(!ignored(src), `${src} is not ignored`);
  });
});

describe('infra/healthcheck.mjs', () => {
  const check = (port: number, timeoutMs = 2000): Promise<{ code: number | null; stderr: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, [`${ROOT}/infra/healthcheck.mjs`], { env: { ...process.env, PORT: String(port), HEALTHCHECK_TIMEOUT_MS: String(timeoutMs) }, timeout: 10_000 }, (err, _out, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr });
      });
    });
  const serve = async (handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; port: number }> => {
    const server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, port: (server.address() as AddressInfo).port };
  };
  const close = (server: Server): Promise<void> => {
    server.closeAllConnections();
    return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  };

  it('exits 0 when GET /health/ready answers 200, 1 when it answers 503', async () => {
    let status = 200;
    const paths: string[] = [];
    const { server, port } = await serve((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
    try {
      assert.equal((await check(port)).code, 0);
      status = 503;
      const unhealthy = await check(port);
      assert.equal(unhealthy.code, 1);
      assert.match(unhealthy.stderr, /503/);
      assert.deepEqual(paths, ['GET /health/ready', 'GET /health/ready']);
    } finally {
      await close(server);
    }
  });

  it('exits 1 when nothing listens, and when the node does not answer in time', async () => {
    const { server, port } = await serve(() => {
      // never answers, as a node with a blocked event loop
    });
    try {
      const t0 = Date.now();
      const hung = await check(port, 300);
      assert.equal(hung.code, 1);
      assert.match(hung.stderr, /no answer within 300 ms/);
      assert.ok(Date.now() - t0 < 5_000);
    } finally {
      await close(server);
    }
    const refused = await check(port);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /ECONNREFUSED/);
  });
});

// ---- docker-compose.yml ----------------------------------------------------------------

const compose = obj(parseYaml(read('docker-compose.yml')), 'docker-compose.yml');
const services = obj(compose['services'], 'services');
const service = (name: string): Obj => obj(services[name], `service ${name}`);
const envOf = (svc: Obj): Record<string, string> => {
  const env = svc['environment'];
  if (Array.isArray(env)) return Object.fromEntries(env.map((e) => String(e).split(/=(.*)/s).slice(0, 2)));
  return Object.fromEntries(Object.entries(obj(env ?? {}, 'environment')).map(([k, v]) => [k, String(v)]));
};
/** The container side of a `ports` entry (`"8080:80"`, `"${X:-8080}:80"`, `80`). */
const containerPort = (entry: unknown): string => String(entry).split(':').pop()?.split('/')[0] ?? '';
/** Bind mounts of a service, as [host path, container path]. */
const binds = (svc: Obj): [string, string][] =>
  ((svc['volumes'] as unknown[] | undefined) ?? [])
    .map((v) => String(v).split(':'))
    .filter((p) => p[0]?.startsWith('.'))
    .map((p) => [p[0] ?? '', p[1] ?? '']);

const nodeService = service('node');
const nodeEnv = envOf(nodeService);
const nodePort = nodeEnv['PORT'] ?? settingDefault('PORT');

describe('docker-compose.yml', () => {
  it('runs redis, the nodes, nginx and prometheus', () => {
    for (const name of ['redis', 'node', 'nginx', 'prometheus']) assert.ok(isObj(services[name]), `service ${name}`);
    for (const [name, svc] of Object.entries(services)) {
      const profiles = obj(svc, name)['profiles'];
      if (['redis', 'node', 'nginx', 'prometheus'].includes(name)) assert.equal(profiles, undefined, `${name} starts with a plain docker compose up`);
    }
  });

  it('runs the official Redis 7 image with AOF on a volume, and a health check', () => {
    const redis = service('redis');
    assert.match(String(redis['image']), /^redis:7([.-]|$)/);
    const command = Array.isArray(redis['command']) ? (redis['command'] as unknown[]).map(String) : String(redis['command']).split(/\s+/);
    assert.equal(command[command.indexOf('--appendonly') + 1], 'yes');
    const volumes = ((redis['volumes'] as unknown[] | undefined) ?? []).map(String);
    const data = volumes.find((v) => v.split(':')[1] === '/data');
    assert.ok(data, 'Redis keeps /data on a volume');
    assert.ok(Object.hasOwn(obj(compose['volumes'], 'volumes'), data.split(':')[0] ?? ''), 'a named volume, declared');
    const test = (obj(redis['healthcheck'], 'redis healthcheck')['test'] as unknown[]).map(String);
    assert.deepEqual(test.slice(-2), ['redis-cli', 'ping']);
  });

  it('builds three node replicas from infra/Dockerfile, reaching Redis by its service name', () => {
    const build = obj(nodeService['build'], 'node build');
    assert.equal(build['context'], '.');
    assert.equal(build['dockerfile'], 'infra/Dockerfile');
    assert.ok(exists(String(build['dockerfile'])));
    assert.equal(obj(nodeService['deploy'], 'deploy')['replicas'], 3);
    assert.equal(nodeService['container_name'], undefined, 'replicas cannot share a container name');
    assert.equal(nodeService['ports'], undefined, 'replicas cannot share a host port: nginx publishes one');
    assert.equal(nodeEnv['REDIS_URL'], 'redis://redis:6379');
    assert.equal(obj(obj(nodeService['depends_on'], 'depends_on')['redis'], 'depends_on.redis')['condition'], 'service_healthy');
  });

  it('gives the node only settings leasehold start reads, and the admin token from the environment, with no default: compose refuses to start without it', () => {
    for (const name of Object.keys(nodeEnv)) assert.ok(CONFIG_ENV.has(name), `${name} is a setting of leasehold start`);
    assert.match(nodeEnv['LEASEHOLD_ADMIN_TOKEN'] ?? '', /^\$\{LEASEHOLD_ADMIN_TOKEN:\?[^}]*16 characters[^}]*\}$/);
  });

  it('publishes every port on 127.0.0.1 unless told otherwise', () => {
    let published = 0;
    for (const [name, svc] of Object.entries(services)) {
      for (const entry of (obj(svc, name)['ports'] as unknown[] | undefined) ?? []) {
        published++;
        assert.match(String(entry), /^\$\{LEASEHOLD_BIND_ADDRESS:-127\.0\.0\.1\}:\$\{\w+:-\d+\}:\d+$/, `${name} publishes ${String(entry)}`);
      }
    }
    assert.ok(published >= 3, 'nginx, prometheus and grafana');
  });

  it('runs Prometheus without its lifecycle API and Grafana without anonymous access', () => {
    const command = ((service('prometheus')['command'] as unknown[]) ?? []).map(String);
    assert.ok(!command.includes('--web.enable-lifecycle'), 'anyone who reaches Prometheus could stop it');
    const grafana = envOf(service('grafana'));
    assert.notEqual(grafana['GF_AUTH_ANONYMOUS_ENABLED'], 'true');
    assert.equal(grafana['GF_AUTH_ANONYMOUS_ORG_ROLE'], undefined);
  });

  it('waits longer than the shutdown grace before killing a node', () => {
    const grace = readDuration(nodeEnv['LEASEHOLD_SHUTDOWN_GRACE'] ?? settingDefault('LEASEHOLD_SHUTDOWN_GRACE'), 'LEASEHOLD_SHUTDOWN_GRACE');
    const stop = goDurationMs(String(nodeService['stop_grace_period']));
    assert.ok(stop >= grace + 5_000, `stop_grace_period ${stop} ms leaves time after the ${grace} ms grace`);
  });

  it('mounts only files that exist', () => {
    for (const [name, svc] of Object.entries(services)) {
      for (const [host] of binds(obj(svc, name))) assert.ok(exists(host), `${name} mounts ${host}`);
    }
  });

  it('publishes prometheus on 9090 with its configuration', () => {
    const prom = service('prometheus');
    assert.ok(((prom['ports'] as unknown[]) ?? []).map(containerPort).includes('9090'));
    const config = ((prom['command'] as unknown[]) ?? []).map(String).find((a) => a.startsWith('--config.file='))?.split('=')[1] ?? '/etc/prometheus/prometheus.yml';
    const mount = binds(prom).find(([, inside]) => config.startsWith(`${inside}/`));
    assert.ok(mount, `${config} is mounted`);
    assert.ok(exists(`${mount[0]}${config.slice(mount[1].length)}`));
  });
});

// ---- infra/nginx/nginx.conf ------------------------------------------------------------

interface Directive {
  readonly name: string;
  readonly args: string[];
  readonly block: Directive[] | undefined;
}

/** Parses nginx configuration syntax into nested directives. */
function parseNginx(text: string): Directive[] {
  const tokens = [...text.matchAll(/#[^\n]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[{};]|(?:\$\{\w+\}|[^\s{};"'#])+/g)]
    .map((m) => m[0])
    .filter((t) => !t.startsWith('#'))
    .map((t) => (/^["']/.test(t) ? t.slice(1, -1) : t));
  let i = 0;
  const parseBlock = (nested: boolean): Directive[] => {
    const out: Directive[] = [];
    while (i < tokens.length) {
      if (tokens[i] === '}') {
        assert.ok(nested, 'no unmatched }');
        i++;
        return out;
      }
      const words: string[] = [];
      while (i < tokens.length && !['{', '}', ';'].includes(tokens[i] ?? '')) words.push(tokens[i++] ?? '');
      const end = tokens[i++];
      assert.ok(words.length > 0 && (end === ';' || end === '{'), `directive ${words.join(' ')} ends with ; or a block`);
      out.push({ name: words[0] ?? '', args: words.slice(1), block: end === '{' ? parseBlock(true) : undefined });
    }
    assert.ok(!nested, 'every block is closed');
    return out;
  };
  return parseBlock(false);
}
const find = (ds: Directive[] | undefined, name: string): Directive[] => (ds ?? []).filter((d) => d.name === name);

describe('infra/nginx/nginx.conf', () => {
  const nginx = service('nginx');
  const mount = binds(nginx).find(([host]) => host.endsWith('infra/nginx/nginx.conf'));
  const conf = parseNginx(read('infra/nginx/nginx.conf'));
  const http = find(conf, 'http')[0]?.block;

  it('is the configuration compose mounts', () => {
    assert.deepEqual(mount, ['./infra/nginx/nginx.conf', '/etc/nginx/nginx.conf']);
  });

  it('balances over node:<status port> re-resolved through Docker\'s DNS, so every replica is used', () => {
    const upstreams = find(http, 'upstream');
    assert.equal(upstreams.length, 1);
    const servers = find(upstreams[0]?.block, 'server');
    assert.equal(servers.length, 1);
    assert.equal(servers[0]?.args[0], `node:${nodePort}`, 'the compose service name and the node\'s PORT');
    assert.ok(servers[0]?.args.includes('resolve'), 'resolve: replicas come and go');
    assert.ok(find(upstreams[0]?.block, 'zone').length === 1, 'resolve needs a shared zone');
    const resolver = [...find(http, 'resolver'), ...find(upstreams[0]?.block, 'resolver')];
    assert.equal(resolver[0]?.args[0], '127.0.0.11', 'Docker\'s embedded DNS');
    const version = /^nginx:(\d+)\.(\d+)(?:\.(\d+))?/.exec(String(nginx['image']));
    assert.ok(version, 'the nginx image is pinned to a version');
    const part = (i: number): number => Number(version[i] ?? 0);
    assert.ok(part(1) * 1e6 + part(2) * 1e3 + part(3) >= 1_027_003, 'resolve in upstream servers needs nginx 1.27.3 or later');
  });

  it('listens on the port compose publishes, and proxies everything to the upstream', () => {
    const server = find(http, 'server')[0]?.block;
    const listen = find(server, 'listen').map((d) => d.args[0]);
    const published = ((nginx['ports'] as unknown[]) ?? []).map(containerPort);
    assert.equal(published.length, 1, 'one host port');
    assert.deepEqual(listen, published);
    const root = find(server, 'location').find((l) => l.args.join(' ') === '/');
    assert.equal(find(root?.block, 'proxy_pass')[0]?.args[0], `http://${find(http, 'upstream')[0]?.args[0]}`);
  });

  it('passes the X-Leasehold-Node header of the node that answered through, neither setting nor hiding it', () => {
    const all = (ds: Directive[] | undefined): Directive[] => (ds ?? []).flatMap((d) => [d, ...all(d.block)]);
    const touching = all(conf).filter(
      (d) => ['add_header', 'add_trailer', 'more_set_headers', 'more_clear_headers', 'proxy_hide_header'].includes(d.name) && d.args.some((a) => /x-leasehold-node/i.test(a)),
    );
    assert.deepEqual(touching.map((d) => `${d.name} ${d.args.join(' ')}`), [], 'each node sets the header to its instance id');
  });
});
