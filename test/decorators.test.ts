/**
 * `@Scheduled` on class methods: jobs named `ClassName.method` (qualified when two classes
 * share a name, an explicit id winning), loaded by the real `leasehold start` from a `.ts`
 * jobs module on two nodes, registered with `runner.register`, and checked by `leasehold check`.
 * Runs the built CLI (`npm run build` first).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRunner, Scheduled, LeaseholdError, type JobContext } from '../src/index.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { BIN, ROOT, runLeasehold, spawnLeasehold } from './helpers/node.js';
import { readRuns, duplicateTicks } from './helpers/runs.js';
import { memoryLogger } from './helpers/log.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

test('two nodes run the decorated classes of a .ts jobs module: an installation method once per tick, same-named classes under qualified names', async () => {
  const runLog = join(mkdtempSync(join(tmpdir(), 'leasehold-decorated-')), 'runs.jsonl');
  const env = { REDIS_URL: redis.url, LEASEHOLD_PREFIX: 'dec', RUN_LOG: runLog, LOG_LEVEL: 'info', LEASEHOLD_SHUTDOWN_GRACE: '1s' };
  const nodes = [0, 1].map((i) => spawnLeasehold(['start', '--jobs', 'test/fixtures/decorated/jobs.ts', '--port', '0'], { ...env, LEASEHOLD_INSTANCE_ID: `d${i}` }));
  try {
    const urls = await Promise.all(nodes.map((n) => n.waitFor((l) => typeof l['url'] === 'string', 20_000)));
    await sleep(4_500);
    const status = (await (await fetch(String(urls[0]?.['url']))).json()) as { jobs: Array<{ id: string }> };
    assert.deepEqual(status.jobs.map((j) => j.id).sort(), ['Digest.send', 'billing.cleanup.Cleanup.purge', 'plain', 'reports-archive', 'reports.cleanup.Cleanup.purge']);
  } finally {
    for (const n of nodes) n.kill('SIGTERM');
    await Promise.all(nodes.map((n) => n.exited));
  }
  const runs = readRuns(runLog).filter((l) => l.job === 'Digest.send');
  assert.ok(runs.length >= 3, `Digest.send ran ${runs.length} times`);
  assert.deepEqual(duplicateTicks(runs, 'Digest.send'), [], 'no tick ran twice');
  assert.ok(runs.every((r) => typeof r.token === 'number'), 'each run held the lease');
});

test('leasehold check names Class.method and the field of every wrong decorated method', async () => {
  const { code, stderr } = await runLeasehold(['check', 'test/fixtures/decorated-invalid.ts']);
  assert.equal(code, 1, stderr);
  const lines = stderr.trimEnd().split('\n');
  assert.equal(lines.length, 5, stderr);
  assert.match(stderr, /job "TwoParameters\.run": field "parameters": the method declares 2 parameters; a scheduled method takes the run context as its only argument/);
  assert.match(stderr, /job "TwoSchedules\.run": field "@Scheduled": 2 schedules on one method/);
  assert.match(stderr, /job "NoSchedule\.run": field "cron": no schedule/);
  assert.match(stderr, /job "ZoneOnRate\.tick": field "zone": a zone applies to a cron schedule only, not to fixedRate/);
  assert.match(stderr, /job "BadHour\.nightly": field "cron": .*hour field "25"/);
  const start = await runLeasehold(['start', '--jobs', 'test/fixtures/decorated-invalid.ts', '--port', '0']);
  assert.notEqual(start.code, 0);
  assert.equal(start.stderr.trimEnd().split('\n').length, 5, start.stderr);
});

test('runner.register: this is the instance, a second class of the same name qualifies both, a wrong method adds nothing', async () => {
  const log = memoryLogger('warn');
  const runner = createRunner({ local: true, logger: log.logger });
  const seen: string[] = [];
  class Counter {
    constructor(private readonly label: string) {}
    @Scheduled({ fixedRate: '50ms' })
    tick(ctx: JobContext): void {
      seen.push(`${this.label}:${ctx.jobId}`);
    }
  }
  assert.deepEqual(runner.register(new Counter('a')).map((j) => j.id), ['Counter.tick']);
  assert.throws(() => runner.register(new Counter('b')), (err: unknown) => err instanceof LeaseholdError && err.code === 'duplicateJob' && /register each with a namespace/.test(err.message));
  assert.deepEqual(runner.jobs().map((j) => j.id), ['Counter.tick'], 'a refused registration changes nothing');
  class Other {
    // @ts-expect-error -- TypeScript refuses it too; plain JavaScript meets the runtime check
    @Scheduled({ fixedRate: '1s', zone: 'UTC' })
    run(): void {}
  }
  assert.throws(() => runner.register(new Other()), /job "Other\.run": field "zone": a zone applies to a cron schedule only/);
  const runner2 = createRunner({ local: true, logger: log.logger });
  runner2.register(new Counter('a'), { namespace: 'first' });
  runner2.register(new Counter('b'), { namespace: 'second' });
  assert.deepEqual(runner2.jobs().map((j) => j.id).sort(), ['first.Counter.tick', 'second.Counter.tick']);
  await runner2.start();
  await sleep(300);
  await runner2.stop();
  assert.ok(seen.includes('a:first.Counter.tick') && seen.includes('b:second.Counter.tick'), seen.join(','));
});

test('@Scheduled on a static or private method is refused, naming the method', () => {
  assert.throws(() => {
    class Nightly {
      @Scheduled({ fixedRate: '1s' })
      static tick(): void {}
    }
    return Nightly;
  }, /\.tick": field "@Scheduled": a scheduled method must be a public instance method .*not a static one/);
  class Hidden {
    @Scheduled({ fixedRate: '1s' })
    // eslint-disable-next-line no-unused-private-class-members -- the decorator is what is tested
    #tick(): void {}
  }
  assert.throws(() => new Hidden(), /job "Hidden\.#tick": field "@Scheduled": a scheduled method must be a public instance method .*not a private one/);
});

test('a .ts jobs module of a project compiled with experimentalDecorators loads under leasehold check', async () => {
  const cwd = join(ROOT, 'test', 'fixtures', 'legacy-decorators');
  const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [BIN, 'check', 'jobs.ts'], { cwd }, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }));
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'jobs.ts: 1 job ok\n');
});
