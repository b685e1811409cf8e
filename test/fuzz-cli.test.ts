/**
 * Environment variables and flags as untrusted input (SPEC 7 and 9):
 * - `readConfig` over random environments and flags returns a configuration the node can
 *   use, or throws one line with a code of exit status 2 that names the variable or flag at
 *   fault and never repeats the admin token;
 * - `leasehold next` over random argument lists exits 0 with ISO lines, or 2 with one line;
 * - the CLI as real processes (`start`, `next`, `check`, `status`, an unknown command) with
 *   bad values: a clear first line on stderr, a non-zero exit, never a stack trace and never
 *   a secret.
 * Seeded, so a failure is reproducible; set FUZZ_SEED to explore other cases.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { CONFIG, readConfig } from '../src/cli/config.js';
import { runNext } from '../src/cli/next.js';
import { exitStatus, isLeaseholdError, type ErrorCode } from '../src/errors.js';
import { readDuration } from '../src/schedule/duration.js';
import { runLeasehold, spawnLeasehold } from './helpers/node.js';

const SEED = Number(process.env['FUZZ_SEED'] ?? 0xc11);
const params = (numRuns: number): fc.Parameters<unknown> => ({ seed: SEED, numRuns });

const TOKEN = 'AdminT0ken-in-the-env-only';
const PASSWORD = 'SuperSecretPw';
const VARS = CONFIG.flatMap((e) => (e.env ? [e.env] : []));
const FLAGS = CONFIG.flatMap((e) => (e.flag ? [e.flag.slice(2)] : []));
const STACK_FRAME = /^\s+at .+[(:]\d+/m;

const value = fc.oneof(
  fc.constantFrom('', ' ', '0', '3000', '65535', '65536', '-1', '08080', '1e3', '0x50', '٣٠٠٠', 'true', 'false', 'info', 'TRACE', 'loud', '10s', '-5s', 'forever', '0.4', '1h',
    'has space', 'ok.prefix:1', 'a/b', 'x'.repeat(65), 'x'.repeat(129), 'redis://127.0.0.1:1', `redis://:${PASSWORD}@127.0.0.1:99999`, 'http://x', 'host:1,host:2', 'mymaster', '\u0000', 'é', '🕐', '$(id)'),
  fc.string({ maxLength: 16 }),
);

describe('readConfig: a usable configuration, or one line naming the variable or flag', () => {
  test('random environments and flags', () => {
    const env = fc.dictionary(fc.constantFrom(...VARS.filter((v) => v !== 'LEASEHOLD_ADMIN_TOKEN')), value, { maxKeys: 6 });
    const flags = fc.dictionary(fc.constantFrom(...FLAGS, 'bogus'), fc.oneof(value, fc.boolean()), { maxKeys: 4 });
    fc.assert(fc.property(env, flags, fc.boolean(), (e, f, withToken) => {
      const environment: NodeJS.ProcessEnv = { ...e, ...(withToken ? { LEASEHOLD_ADMIN_TOKEN: TOKEN } : {}) };
      let config;
      try {
        config = readConfig(f, environment);
      } catch (err) {
        assert.ok(isLeaseholdError(err) && exitStatus(err) === 2, `threw ${String(err)}, not a usage error`);
        assert.ok(!err.message.includes('\n'), `more than one line: ${err.message}`);
        assert.ok(!err.message.includes(TOKEN), 'the admin token is in the message');
        assert.ok(VARS.some((v) => err.message.includes(v)) || FLAGS.some((fl) => err.message.includes(`--${fl}`)), `names no variable or flag: ${err.message}`);
        return;
      }
      assert.ok(Number.isInteger(config.port) && config.port >= 0 && config.port <= 65535, `port ${config.port}`);
      assert.match(config.prefix, /^[A-Za-z0-9._:-]{1,64}$/);
      if (config.instanceId !== undefined) assert.match(config.instanceId, /^[A-Za-z0-9._:@-]{1,128}$/);
      assert.doesNotThrow(() => readDuration(config.shutdownGrace, 'grace', true), `grace ${config.shutdownGrace}`);
      assert.equal(config.adminToken, withToken ? TOKEN : undefined);
      assert.ok([config.redisUrl, config.redisClusterNodes, config.redisSentinels].filter((x) => x !== undefined).length <= 1, 'two Redis sources');
      // A flag wins over its variable.
      for (const entry of CONFIG) {
        const flag = entry.flag?.slice(2);
        const given = flag === undefined ? undefined : f[flag];
        if (typeof given === 'string' && !entry.boolean && entry.key !== 'port') assert.equal(String(config[entry.key]), given, `--${flag}`);
      }
    }), params(3_000));
  });

  test('each bad value is named by its variable', () => {
    const cases: Array<[Record<string, string>, RegExp, ErrorCode?]> = [
      [{ PORT: 'http' }, /^PORT\/--port: "http" is not a port/],
      [{ LEASEHOLD_PREFIX: 'has space' }, /^LEASEHOLD_PREFIX\/--prefix: "has space" must be/],
      [{ LEASEHOLD_INSTANCE_ID: 'a/b' }, /^LEASEHOLD_INSTANCE_ID\/--instance-id: "a\/b" must be/],
      [{ LEASEHOLD_SHUTDOWN_GRACE: 'forever' }, /^LEASEHOLD_SHUTDOWN_GRACE\/--shutdown-grace: "forever" is not a duration/],
      [{ LEASEHOLD_SHUTDOWN_GRACE: '-5s' }, /^LEASEHOLD_SHUTDOWN_GRACE\/--shutdown-grace: "-5s" is not a duration/],
      [{ LEASEHOLD_EVENTS_MAX_CLIENTS: '0' }, /^LEASEHOLD_EVENTS_MAX_CLIENTS\/--events-max-clients: "0" is not a whole number from 1 to 100000$/],
      [{ LEASEHOLD_EVENTS_MAX_CLIENTS: '100001' }, /^LEASEHOLD_EVENTS_MAX_CLIENTS\/--events-max-clients: "100001" is not a whole number/],
      [{ LEASEHOLD_EVENTS_MAX_CLIENTS: 'many' }, /^LEASEHOLD_EVENTS_MAX_CLIENTS\/--events-max-clients: "many" is not a whole number/],
      [{ LEASEHOLD_METRICS_JOB_LIMIT: '-1' }, /^LEASEHOLD_METRICS_JOB_LIMIT\/--metrics-job-limit: "-1" is not a whole number from 0 to 1000000$/],
      [{ LEASEHOLD_METRICS_JOB_LIMIT: '0100' }, /^LEASEHOLD_METRICS_JOB_LIMIT\/--metrics-job-limit: "0100" is not a whole number/],
      [{ REDIS_SENTINELS: 'a:1' }, /REDIS_SENTINEL_NAME/, 'invalidRedisTarget'],
      [{ REDIS_URL: 'redis://x', REDIS_CLUSTER_NODES: 'a:1' }, /only one of REDIS_URL, REDIS_CLUSTER_NODES/, 'invalidRedisTarget'],
    ];
    for (const [env, message, code = 'invalidConfig'] of cases) {
      assert.throws(() => readConfig({}, env), (e: unknown) => isLeaseholdError(e, code) && message.test(e.message), JSON.stringify(env));
    }
    assert.equal(readConfig({ 'shutdown-grace': '2s' }, { LEASEHOLD_SHUTDOWN_GRACE: 'forever' }).shutdownGrace, '2s');
    assert.equal(readConfig({}, { LEASEHOLD_EVENTS_MAX_CLIENTS: '250' }).eventsMaxClients, 250);
    assert.equal(readConfig({}, {}).eventsMaxClients, undefined, 'the runner\'s default');
  });
});

describe('leasehold next: exit 0 with fire times, or 2 with one line', () => {
  test('random argument lists', () => {
    const arg = fc.oneof(
      fc.constantFrom('--zone', '--from', '-n', '--count', '-z', '--', '-', '--zone=UTC', '-n0', '-n10001', '-n3', '--from=2026-03-08T01:30', 'Europe/Berlin', 'America/New_York', 'Mars/Olympus', '+14:00', '+14:01',
        '0 0 * * * *', '* * * * * *', '0 30 2 * * *', '@daily', '@often', '0 0 25 * * *', '0 0 0 5 * 6L', '2026-13-01', '0000-01-01', '9999-12-31T23:59:59Z', '2026-03-08T02:30', '2026-02-30', '5', '--help'),
      fc.string({ maxLength: 14 }),
    );
    fc.assert(fc.property(fc.array(arg, { maxLength: 6 }), (argv) => {
      const r = runNext(argv, { now: () => Date.UTC(2026, 4, 5) });
      assert.ok(r.code === 0 || r.code === 2, `exit ${r.code}`);
      assert.ok(!STACK_FRAME.test(r.stderr), r.stderr);
      if (r.code === 2) {
        assert.equal(r.stdout, '');
        assert.match(r.stderr, /^leasehold next: [^\n]+\n$/);
        return;
      }
      for (const line of r.stdout.split('\n').slice(0, -1)) assert.match(line, /^[+-]?\d{4,6}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?[+-]\d\d:\d\d$/);
      assert.ok(r.stderr === '' || /^leasehold next: no (further )?fire time after [^\n]+\n$/.test(r.stderr), r.stderr);
    }), params(2_000));
  });
});

interface ProcessCase {
  readonly args: string[];
  readonly env?: Record<string, string>;
  /** The first line of stderr. */
  readonly first: RegExp;
  readonly code: number;
  /** A start whose port another process holds: the configuration's error is still the one named. */
  readonly portTaken?: true;
}

describe('the CLI as real processes: a clear line, a non-zero exit, no stack trace, no secret', () => {
  const jobs = 'test/fixtures/jobs-basic.mjs';
  const cases: ProcessCase[] = [
    { args: ['start', '--jobs', jobs], env: { PORT: 'http' }, first: /^leasehold: PORT\/--port: "http" is not a port/, code: 2 },
    { args: ['start', '--jobs', jobs], env: { LEASEHOLD_SHUTDOWN_GRACE: 'forever' }, first: /^leasehold: LEASEHOLD_SHUTDOWN_GRACE\/--shutdown-grace: "forever"/, code: 2 },
    { args: ['start', '--jobs', jobs, '--prefix', 'has space'], first: /^leasehold: LEASEHOLD_PREFIX\/--prefix: "has space"/, code: 2 },
    { args: ['start', '--jobs', jobs], env: { LEASEHOLD_INSTANCE_ID: '../../etc' }, first: /^leasehold: LEASEHOLD_INSTANCE_ID\/--instance-id:/, code: 2 },
    { args: ['start', '--jobs', jobs], env: { LOG_LEVEL: 'loud' }, first: /^leasehold: LOG_LEVEL: "loud" is not one of/, code: 2 },
    { args: ['start', '--jobs', jobs], env: { REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:99999` }, first: /^leasehold: Redis url "redis:\/\/:\*\*\*@127\.0\.0\.1:99999" is not a valid URL/, code: 2, portTaken: true },
    { args: ['start', '--jobs', jobs], env: { REDIS_URL: `redis://:${PASSWORD}%zz@127.0.0.1:6390` }, first: /^leasehold: Redis url "redis:\/\/:\*\*\*@127\.0\.0\.1:6390" has a badly escaped password/, code: 2, portTaken: true },
    { args: ['start', '--jobs', jobs], env: { REDIS_SENTINELS: '127.0.0.1:1' }, first: /REDIS_SENTINEL_NAME/, code: 2, portTaken: true },
    { args: ['start', '--jobs', jobs], env: { REDIS_CLUSTER_NODES: 'a:b:c' }, first: /REDIS_CLUSTER_NODES/, code: 2, portTaken: true },
    { args: ['start', '--jobs', jobs, '--bogus'], first: /^leasehold: start: Unknown option '--bogus'/, code: 2 },
    { args: ['start', '--jobs'], first: /^leasehold: start: Option '--jobs <value>' argument missing/, code: 2 },
    { args: ['start'], first: /^leasehold: start: --jobs <module> is required/, code: 2 },
    { args: ['start', '--jobs', 'test/fixtures/no-such-module.mjs'], first: /^leasehold: jobs module test\/fixtures\/no-such-module\.mjs: no such file/, code: 1 },
    { args: ['start', '--jobs', 'test/fixtures/jobs-not-array.mjs'], first: /^leasehold: jobs module .*: its default export must be an array/, code: 1 },
    { args: ['start', '--jobs', 'test/fixtures'], first: /^leasehold: jobs module test\/fixtures failed to load: /, code: 1 },
    { args: ['start', '--jobs', 'test/fixtures/jobs-invalid.ts'], first: /^leasehold: job "bad-hour": field "cron": .*hour field/, code: 2 },
    { args: ['next', '0 0 25 * * *'], first: /^leasehold next: Invalid cron expression "0 0 25 \* \* \*": hour field "25"/, code: 2 },
    { args: ['next', '* * * * * *', '--zone', 'Mars/Olympus'], first: /^leasehold next: Invalid zone "Mars\/Olympus"/, code: 2 },
    { args: ['next', '* * * * * *', '-n', '0'], first: /^leasehold next: -n "0" must be a whole number/, code: 2 },
    { args: ['check', 'test/fixtures/jobs-invalid.ts'], first: /^test\/fixtures\/jobs-invalid\.ts: job "bad-hour": field "cron"/, code: 1 },
    { args: ['check', 'no/such/module.ts'], first: /^leasehold: jobs module no\/such\/module\.ts: no such file/, code: 1 },
    { args: ['check', 'a', 'b'], first: /^usage: leasehold check/, code: 2 },
    { args: ['status', '--bogus'], first: /^leasehold status: Unknown option '--bogus'/, code: 2 },
    { args: ['status'], first: /^leasehold status: REDIS_URL/, code: 2 },
    { args: ['status', '--redis-url', `redis://:${PASSWORD}@127.0.0.1:99999`], first: /^leasehold status: Redis url "redis:\/\/:\*\*\*@127\.0\.0\.1:99999"/, code: 2 },
    { args: ['frobnicate'], first: /^leasehold: unknown command "frobnicate"$/, code: 2 },
  ];

  test(`${cases.length} bad invocations`, async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const taken = { PORT: String(typeof address === 'object' && address !== null ? address.port : 0) };
    const results = await Promise.all(cases.map((c) => runLeasehold(c.args, { LEASEHOLD_ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'info', ...c.env, ...(c.portTaken ? taken : {}) }))).finally(() => blocker.close());
    cases.forEach((c, i) => {
      const r = results[i];
      assert.ok(r);
      const what = `leasehold ${c.args.join(' ')} ${JSON.stringify(c.env ?? {})}: exit ${String(r.code)}, stderr ${JSON.stringify(r.stderr.slice(0, 400))}`;
      assert.equal(r.code, c.code, what);
      assert.match(r.stderr.split('\n')[0] ?? '', c.first, what);
      assert.ok(!STACK_FRAME.test(r.stderr) && !STACK_FRAME.test(r.stdout), `a stack trace: ${what}`);
      for (const secret of [TOKEN, PASSWORD]) assert.ok(!r.stderr.includes(secret) && !r.stdout.includes(secret), `${secret} in the output: ${what}`);
    });
  });

  test('a port already taken ends the node with a clear line and exit 2, before it starts a job', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const address = blocker.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const node = spawnLeasehold(['start', '--jobs', jobs, '--host', '127.0.0.1', '--port', String(port)], { LOG_LEVEL: 'info' });
    const timeout = new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 4_000).unref());
    const outcome = await Promise.race([node.exited, timeout]);
    if (outcome === 'running') node.kill('SIGKILL');
    blocker.close();
    if (outcome === 'running') assert.fail(`still running 4 s after: ${node.stderr()}`);
    assert.equal(outcome.code, 2);
    assert.match(node.stderr(), /cannot serve HTTP on 127\.0\.0\.1:\d+: .*EADDRINUSE/);
    assert.ok(!STACK_FRAME.test(node.stderr()));
    // Nothing ran: a node that cannot serve its status does not start its jobs first.
    assert.doesNotMatch(node.stdout() + node.stderr(), /runner started|"jobId"/);
  });
});
