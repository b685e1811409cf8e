/**
 * `rediss://` against a TLS-only `redis-server` (SPEC 7) with a self-signed certificate: a CA
 * and a server certificate made with `openssl` for this test. Node trusts the CA through
 * `NODE_EXTRA_CA_CERTS`, which ioredis's TLS connections honour: no leasehold option is
 * needed. Skipped when this Redis build has no TLS, or openssl is missing (a failure under CI).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { runLeasehold, spawnLeasehold } from './helpers/node.js';
import { freePort } from './helpers/redis.js';
import { IN_CI } from './helpers/tools.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-tls-'));
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

function why(): string | false {
  if (spawnSync('openssl', ['version']).status !== 0) return 'openssl is not installed';
  // A build without TLS refuses the directive; one with it only finds no certificate.
  const probe = spawnSync('redis-server', ['--port', '0', '--tls-port', '1', '--loglevel', 'warning'], { encoding: 'utf8', timeout: 5_000 });
  const out = `${probe.stdout}${probe.stderr}`;
  if (/Bad directive|wrong number of arguments/i.test(out) && /tls-port/i.test(out)) return 'this redis-server is built without TLS';
  return false;
}
const missing = why();
// CI installs openssl and Debian's redis-server, which has TLS: there a missing one fails the tests.
const skip = IN_CI ? false : missing;

let server: ChildProcess | undefined;
let port = 0;
const ca = join(dir, 'ca.crt');

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** True once the server completes a TLS handshake trusting `ca` and answers PING. */
function pings(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca: [execFileSync('cat', [ca])], servername: 'localhost' });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('secureConnect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      reply += d.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

before(async () => {
  if (skip) return;
  assert.equal(missing, false, 'CI must have openssl and a redis-server with TLS');
  // A CA, and a server certificate it signs for 127.0.0.1 and localhost.
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=leasehold test CA', '-keyout', 'ca.key', '-out', 'ca.crt');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'server.key', '-out', 'server.csr');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'san.ext', '-out', 'server.crt');
  port = await freePort();
  const args = [
    '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1',
    '--tls-cert-file', join(dir, 'server.crt'), '--tls-key-file', join(dir, 'server.key'), '--tls-ca-cert-file', ca,
    '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning',
  ];
  const [cmd, argv] = SETPRIV !== undefined ? [SETPRIV, ['--pdeathsig', 'KILL', 'redis-server', ...args]] : ['redis-server', args];
  server = spawn(cmd, argv, { stdio: 'ignore' });
  const until = Date.now() + 10_000;
  while (!(await pings())) {
    if (Date.now() > until || server.exitCode !== null) throw new Error('the TLS redis-server did not answer');
    await sleep(50);
  }
});

after(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGKILL');
    await new Promise((r) => server?.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

test('rediss:// with a self-signed CA trusted through NODE_EXTRA_CA_CERTS: a node claims, counts and serves its status over TLS', { skip }, async () => {
  const url = `rediss://127.0.0.1:${port}`;
  const jobs = join(dir, 'jobs.mjs');
  writeFileSync(jobs, "export default [{ id: 'tls-job', scope: 'installation', fixedRate: '300ms', lease: '2s', run: async () => {} }];\n");
  const node = spawnLeasehold(['start', '--jobs', jobs, '--port', '0', '--host', '127.0.0.1'], {
    REDIS_URL: url, NODE_EXTRA_CA_CERTS: ca, LEASEHOLD_PREFIX: 'tls1', LEASEHOLD_INSTANCE_ID: 'tls-node', LOG_LEVEL: 'info',
  });
  try {
    const listening = await node.waitFor((l) => typeof l['port'] === 'number' && String(l['msg']).startsWith('HTTP listening'), 15_000);
    let job = { succeeded: 0 };
    for (let i = 0; i < 50 && job.succeeded < 2; i++) {
      await sleep(200);
      const res = await fetch(`http://127.0.0.1:${String(listening['port'])}/manage/jobs/tls-job`);
      if (res.status === 200) job = (await res.json()) as { succeeded: number };
    }
    assert.ok(job.succeeded >= 2, `ran and counted over TLS (${job.succeeded})`);
    const health = await fetch(`http://127.0.0.1:${String(listening['port'])}/health/ready`);
    assert.equal(health.status, 200);
  } finally {
    node.kill('SIGTERM');
    assert.equal((await node.exited).code, 0);
  }
  assert.ok(!node.lines.some((l) => Number(l['level']) >= 50), 'no error logged');

  const status = await runLeasehold(['status', '--json'], { REDIS_URL: url, NODE_EXTRA_CA_CERTS: ca, LEASEHOLD_PREFIX: 'tls1' });
  assert.equal(status.code, 0, status.stderr);
  assert.ok((JSON.parse(status.stdout) as { jobs: Array<{ id: string }> }).jobs.some((j) => j.id === 'tls-job'));
});

test('without the CA the certificate is refused, and a plain redis:// URL gets no answer from the TLS port', { skip }, async () => {
  const [untrusted, plain] = await Promise.all([
    runLeasehold(['status'], { REDIS_URL: `rediss://127.0.0.1:${port}`, NODE_EXTRA_CA_CERTS: '', LEASEHOLD_PREFIX: 'tls1' }),
    runLeasehold(['status'], { REDIS_URL: `redis://127.0.0.1:${port}`, LEASEHOLD_PREFIX: 'tls1' }),
  ]);
  assert.equal(untrusted.code, 1);
  assert.match(untrusted.stderr, /self[- ]signed certificate/i);
  assert.equal(plain.code, 1);
  assert.match(plain.stderr, /unreachable/);
});
