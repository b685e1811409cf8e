/**
 * `@Async` methods: each call submits a task to the method's executor and returns at once a
 * promise of its result, run with `this` bound to the registered instance; a call before
 * `runner.register` rejects; `@Async` on a `@Scheduled` method is refused by `register` and by
 * `leasehold check`, naming Class.method; on a queue executor a call made on one node process
 * runs on another that registered the same class.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner, Async, Scheduled, isLeaseholdError, type TaskEndedEvent } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold, spawnLeasehold } from './helpers/node.js';
import { until } from './helpers/wait.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { Greeter, spawnAsyncNode } from './fixtures/async/greeter.js';

let redis: TestRedis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

test('an @Async method returns at once; its calls run on its executor, at most `concurrency` at a time, with this bound', async () => {
  const log = memoryLogger('warn');
  const runner = createRunner({ local: true, logger: log.logger, shutdownGrace: '300ms', executors: { mail: { kind: 'loop', concurrency: 2 } } });
  const ended: TaskEndedEvent[] = [];
  runner.on('taskEnded', (e) => ended.push(e));
  let active = 0;
  let peak = 0;
  class Mailer {
    sent: string[] = [];
    constructor(private readonly from: string) {}
    @Async({ executor: 'mail' })
    async send(to: string, subject: string): Promise<string> {
      active++;
      peak = Math.max(peak, active);
      await sleep(40);
      active--;
      this.sent.push(to);
      return `${this.from} -> ${to}: ${subject}`;
    }
    @Async({ executor: 'mail' })
    async fail(): Promise<never> {
      throw new Error('smtp refused');
    }
  }
  const mailer = new Mailer('ops@example.com');
  await assert.rejects(mailer.send('a@example.com', 'early'), (err: unknown) => isLeaseholdError(err, 'invalidState') && /@Async method Mailer\.send called before its instance was registered: call runner\.register\(instance\) first/.test((err as Error).message));
  assert.deepEqual(runner.register(mailer), [], 'no job: only tasks');
  await runner.start();
  const calls = ['a', 'b', 'c', 'd'].map((n) => mailer.send(`${n}@example.com`, 'hi'));
  assert.deepEqual(mailer.sent, [], 'the calls returned before any ran to its end');
  assert.deepEqual(await Promise.all(calls), ['a', 'b', 'c', 'd'].map((n) => `ops@example.com -> ${n}@example.com: hi`));
  assert.equal(peak, 2, 'the executor ran two at a time');
  await assert.rejects(mailer.fail(), /smtp refused/);
  assert.deepEqual(
    ended.map((e) => `${e.task}@${e.executor}:${e.outcome}`),
    [...Array(4).fill('Mailer.send@mail:succeeded'), 'Mailer.fail@mail:failed'],
  );
  const [stats] = await runner.executors();
  assert.equal(stats?.name, 'mail');
  assert.equal(stats?.succeeded, 4);
  await runner.stop();
});

test('@Async tasks are named as jobs are: a second class of the same name qualifies both, and its calls follow the rename', async () => {
  const runner = createRunner({ local: true, logger: memoryLogger('warn').logger });
  const ended: string[] = [];
  runner.on('taskEnded', (e) => ended.push(e.task));
  class Export {
    @Async()
    async run(n: number): Promise<number> {
      return n * 2;
    }
  }
  const a = new Export();
  runner.register(a, { namespace: 'reports' });
  await runner.start();
  assert.equal(await a.run(1), 2);
  const Other = (() => {
    class Export {
      @Async({ id: 'custom-export' })
      async run(n: number): Promise<number> {
        return n * 3;
      }
      @Async()
      async more(): Promise<string> {
        return 'more';
      }
    }
    return Export;
  })();
  assert.throws(() => runner.register(new Other()), (err: unknown) => isLeaseholdError(err, 'duplicateJob') && /class Export: another registered class has the same name/.test((err as Error).message));
  const b = new Other();
  runner.register(b, { namespace: 'billing' });
  assert.equal(await b.run(2), 6);
  assert.equal(await b.more(), 'more');
  assert.equal(await a.run(2), 4);
  assert.deepEqual(ended, ['Export.run', 'custom-export', 'billing.Export.more', 'reports.Export.run']);
  await runner.stop();
});

test('@Async on a @Scheduled method is refused at registration, naming Class.method and why, in either order', () => {
  const runner = createRunner({ local: true, logger: memoryLogger('warn').logger });
  class Nightly {
    @Scheduled({ fixedRate: '1h' })
    @Async()
    async report(): Promise<void> {}
  }
  class Reversed {
    @Async()
    @Scheduled({ fixedRate: '1h' })
    async report(): Promise<void> {}
  }
  for (const [instance, name] of [[new Nightly(), 'Nightly.report'], [new Reversed(), 'Reversed.report']] as const) {
    assert.throws(
      () => runner.register(instance),
      (err: unknown) =>
        isLeaseholdError(err, 'invalidDecorator') &&
        err.message.includes(`job "${name}": field "@Async": a @Scheduled method cannot be @Async: its run would end as soon as the work was queued, so runs could overlap and an installation lease be released while the work goes on`),
    );
  }
  assert.deepEqual(runner.jobs(), []);
});

test('leasehold check and start refuse an @Async @Scheduled method with the same message', async () => {
  const { code, stderr } = await runLeasehold(['check', 'test/fixtures/async-invalid.ts']);
  assert.equal(code, 1, stderr);
  assert.match(stderr, /job "Reports\.nightly": field "@Async": a @Scheduled method cannot be @Async: its run would end as soon as the work was queued, so runs could overlap and an installation lease be released while the work goes on/);
  const start = await runLeasehold(['start', '--jobs', 'test/fixtures/async-invalid.ts', '--port', '0']);
  assert.notEqual(start.code, 0);
  assert.match(start.stderr, /job "Reports\.nightly": field "@Async": a @Scheduled method cannot be @Async/);
});

test('on a queue executor a call made on one node process runs on another that registered the class, and its result comes back', async () => {
  const prefix = 'async-q';
  const node = spawnAsyncNode({ REDIS_URL: redis.url, LEASEHOLD_PREFIX: prefix, LEASEHOLD_INSTANCE_ID: 'consumer', NODE_NAME: 'consumer' });
  try {
    await until('the consuming node to start', () => node.out().includes('ready'), 20_000);
    // This process registers the class but never starts: it submits and does not consume.
    const runner = createRunner({ redisUrl: redis.url, prefix, logger: memoryLogger('warn').logger, executors: { greetings: { kind: 'queue' } } });
    const greeter = new Greeter();
    runner.register(greeter);
    assert.deepEqual(await Promise.all([greeter.greet('ada'), greeter.greet('alan')]), ['hello ada from consumer', 'hello alan from consumer']);
    await runner.stop();
  } finally {
    node.child.kill('SIGTERM');
    await node.exited;
  }
});

test('leasehold start registers the @Async methods of a jobs module\'s instances: a scheduled method awaits one, run on the executor the module configures', async () => {
  const runLog = join(mkdtempSync(join(tmpdir(), 'lh-async-')), 'runs.jsonl');
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/async/jobs.ts', '--port', '0'], { REDIS_URL: redis.url, LEASEHOLD_PREFIX: 'async-cli', RUN_LOG: runLog, LEASEHOLD_SHUTDOWN_GRACE: '1s' });
  try {
    await until('two runs that awaited the @Async call', () => existsSync(runLog) && readFileSync(runLog, 'utf8').trim().split('\n').length >= 2, 20_000);
  } finally {
    node.kill('SIGTERM');
    await node.exited;
  }
  const lines = readFileSync(runLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { job: string; value: number });
  assert.deepEqual(lines[0], { job: 'Pipeline.tick', value: 42 });
  const check = await runLeasehold(['check', 'test/fixtures/async/jobs.ts']);
  assert.equal(check.code, 0, check.stderr);
});

test('two classes named Mailer with @Async methods only, in two files of a jobs module, take qualified names as same-named @Scheduled classes do', async () => {
  const runLog = join(mkdtempSync(join(tmpdir(), 'lh-async-clash-')), 'runs.jsonl');
  const check = await runLeasehold(['check', 'test/fixtures/async-clash/jobs.ts']);
  assert.equal(check.code, 0, check.stderr);
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/async-clash/jobs.ts', '--port', '0'], { REDIS_URL: undefined, RUN_LOG: runLog, LEASEHOLD_SHUTDOWN_GRACE: '1s', LOG_LEVEL: 'info' });
  try {
    await until('a run that awaited both mailers', () => existsSync(runLog) && readFileSync(runLog, 'utf8').trim() !== '', 20_000);
  } finally {
    node.kill('SIGTERM');
    await node.exited;
  }
  const [first] = readFileSync(runLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as unknown);
  assert.deepEqual(first, { job: 'Outbox.flush', sent: ['billing mail to ada', 'reports mail to ada'] });
  // A failed call is logged under its task's name.
  const names = new Set(node.lines.filter((l) => l['outcome'] === 'failed' && typeof l['task'] === 'string').map((l) => l['task']));
  assert.deepEqual([...names].sort(), ['billing.mailer.Mailer.send', 'reports.mailer.Mailer.send']);
});
