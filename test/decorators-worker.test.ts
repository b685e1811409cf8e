/**
 * Decorated methods on worker threads: a `@Scheduled({ thread: 'worker' })` method and an
 * `@Async` method on a worker executor run in a thread that loads their module and finds the
 * method by its job's or task's name, on the instance the module makes: under `leasehold start`
 * (the jobs module's instances, same-named classes told apart by their qualified names) and in an
 * embedding service (`module: import.meta.url`, the module's exported instance). The CLI test
 * runs the built CLI (`npm run build` first).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner, Async, isLeaseholdError, type RunEndedEvent, type TaskEndedEvent } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold, spawnLeasehold } from './helpers/node.js';
import { until } from './helpers/wait.js';
import { Thumbnails, firstTwin, secondTwin } from './fixtures/decorated-worker/embedded.js';

function lines(path: string): Array<Record<string, unknown>> {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('leasehold start runs a jobs module\'s @Scheduled({ thread: "worker" }) methods and @Async methods on a worker executor in worker threads, each on the instance of the class it is named after', async () => {
  const runLog = join(mkdtempSync(join(tmpdir(), 'lh-decorated-worker-')), 'runs.jsonl');
  const node = spawnLeasehold(['start', '--jobs', 'test/fixtures/decorated-worker/jobs.ts', '--port', '0'], { REDIS_URL: undefined, RUN_LOG: runLog, LEASEHOLD_SHUTDOWN_GRACE: '1s', LOG_LEVEL: 'info' });
  const jobs = ['Crunch.digest', 'Crunch.offload', 'billing.meter.Meter.count', 'reports.meter.Meter.count'];
  try {
    // Generous: each thread loads the jobs module through tsx, four at once on a busy machine.
    await until('two runs of each job', () => jobs.every((job) => lines(runLog).filter((l) => l['job'] === job).length >= 2), 60_000);
  } finally {
    node.kill('SIGTERM');
    await node.exited;
  }
  const runs = lines(runLog);
  const first = (job: string): Record<string, unknown> | undefined => runs.find((l) => l['job'] === job);
  assert.deepEqual(first('Crunch.digest'), { job: 'Crunch.digest', mainThread: false, tag: 'made by the jobs module' }, 'in a thread, with this bound to the module\'s instance');
  assert.deepEqual(first('Crunch.offload'), { job: 'Crunch.offload', mainThread: true, result: { value: 49, mainThread: false, tag: 'made by the jobs module' } }, 'the @Async call ran in a thread and its result came back');
  assert.deepEqual(first('billing.meter.Meter.count'), { job: 'billing.meter.Meter.count', mainThread: false, file: 'billing' });
  assert.deepEqual(first('reports.meter.Meter.count'), { job: 'reports.meter.Meter.count', mainThread: false, file: 'reports' });
  const failures = node.lines.filter((l) => Number(l['level']) >= 40 && (typeof l['jobId'] === 'string' || typeof l['task'] === 'string'));
  assert.deepEqual(failures, [], 'no run or task failed');
  const check = await runLeasehold(['check', 'test/fixtures/decorated-worker/jobs.ts']);
  assert.equal(check.code, 0, check.stderr);
});

test('an embedding service runs a decorated class\'s worker-thread job and @Async method from the module it names, also once a same-named class qualifies their names', async () => {
  const log = memoryLogger('info');
  const runner = createRunner({ logger: log.logger, shutdownGrace: '500ms', executors: { cpu: { kind: 'worker', concurrency: 1 } } });
  const runs: RunEndedEvent[] = [];
  const tasks: TaskEndedEvent[] = [];
  runner.on('runEnded', (e) => runs.push(e));
  runner.on('taskEnded', (e) => tasks.push(e));
  // Another instance than the module's own: the thread runs the method on the one the module exports.
  const registered = new Thumbnails(64);
  runner.register(registered);
  await runner.start();
  try {
    assert.deepEqual(await registered.render('cat.png'), { name: 'cat.png', size: 64, mainThread: false });
    assert.deepEqual(tasks.map((e) => `${e.task}@${e.executor}:${e.outcome}`), ['Thumbnails.render@cpu:succeeded']);
    assert.match(await registered.renderInThread('cat.png'), /^@Async method Thumbnails\.render called in a worker thread: there is no runner here to submit it to/, 'no runner in a thread: said so');
    await until('two runs of the worker job', () => runs.filter((e) => e.jobId === 'Thumbnails.sweep').length >= 2, 30_000);
    assert.deepEqual([...new Set(runs.map((e) => `${e.jobId}:${e.outcome}`))], ['Thumbnails.sweep:succeeded'], JSON.stringify(runs.map((e) => e.error)));
    const swept = log.lines.find((l) => l['msg'] === 'swept the thumbnail cache');
    assert.equal(swept?.['jobId'], 'Thumbnails.sweep');
    assert.equal(swept?.['mainThread'], false);
    assert.equal(swept?.['size'], 64);
  } finally {
    await runner.stop();
  }
  // Qualified names: the thread finds the method under the name the runner gives it.
  const qualified = createRunner({ logger: memoryLogger('warn').logger, shutdownGrace: '500ms', executors: { cpu: { kind: 'worker', concurrency: 1 } } });
  const ended: RunEndedEvent[] = [];
  const taskEnded: TaskEndedEvent[] = [];
  qualified.on('runEnded', (e) => ended.push(e));
  qualified.on('taskEnded', (e) => taskEnded.push(e));
  const media = new Thumbnails(64);
  qualified.register(media, { namespace: 'media' });
  const Other = (() => {
    class Thumbnails {
      @Async()
      async render(name: string): Promise<string> {
        return `other ${name}`;
      }
    }
    return Thumbnails;
  })();
  const other = new Other();
  qualified.register(other, { namespace: 'other' });
  await qualified.start();
  try {
    assert.deepEqual(await media.render('dog.png'), { name: 'dog.png', size: 64, mainThread: false });
    assert.equal(await other.render('dog.png'), 'other dog.png');
    await until('a run of the qualified worker job', () => ended.some((e) => e.jobId === 'media.Thumbnails.sweep'), 30_000);
    assert.deepEqual([...new Set(ended.map((e) => `${e.jobId}:${e.outcome}`))], ['media.Thumbnails.sweep:succeeded'], JSON.stringify(ended.map((e) => e.error)));
    assert.deepEqual(taskEnded.map((e) => `${e.task}@${e.executor}:${e.outcome}`), ['media.Thumbnails.render@cpu:succeeded', 'other.Thumbnails.render@default:succeeded']);
  } finally {
    await qualified.stop();
  }
});

test('an @Async method on a worker executor without a module is refused at registration, saying to name its module', () => {
  class Resize {
    @Async({ executor: 'cpu' })
    async run(): Promise<void> {}
  }
  const runner = createRunner({ logger: memoryLogger('warn').logger, executors: { cpu: { kind: 'worker' } } });
  assert.throws(
    () => runner.register(new Resize()),
    (err: unknown) => isLeaseholdError(err, 'invalidTask') && /@Async Resize\.run: .*field "module": executor "cpu" runs tasks in worker threads, which load the task from its module: give module: import\.meta\.url/.test((err as Error).message),
  );
});

test('a thread that cannot tell which exported instance a qualified name means says so, naming the candidates', async () => {
  const runner = createRunner({ logger: memoryLogger('error').logger, shutdownGrace: '500ms', executors: { cpu: { kind: 'worker', concurrency: 1 } } });
  runner.register(firstTwin, { namespace: 'a' });
  runner.register(secondTwin, { namespace: 'b' });
  await runner.start();
  try {
    await assert.rejects(
      firstTwin.who(),
      (err: unknown) => isLeaseholdError(err, 'unknownTask') && /task "a\.Twin\.who": its module .*embedded\.ts exports 2 instances whose decorated method it could be \(Twin\.who \(.*embedded\.ts\), Twin\.who \(.*\)\): give the method an explicit id, or export one instance of the class/.test((err as Error).message),
    );
  } finally {
    await runner.stop();
  }
});
