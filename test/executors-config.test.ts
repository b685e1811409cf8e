/**
 * Executors as configured: the environment switching an executor's kind at deployment (the
 * fields the code gave for the old kind are ignored with one warning), and tasks that name an
 * executor nobody configured (refused, naming the configured ones and the closest, unless the
 * configuration has a catch-all `'*'` entry).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Async, createRunner, defineTask, isLeaseholdError, type RunnerOptions } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold } from './helpers/node.js';
import { hog } from './fixtures/tasks-worker.js';

/** Runs `fn` with the environment variables set, then restores them. */
function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** A runner without Redis logging to memory. */
function quiet(opts: RunnerOptions = {}) {
  const log = memoryLogger('info');
  return { runner: createRunner({ logger: log.logger, ...opts }), log };
}

/** The warnings logged about executors. */
const executorWarnings = (lines: ReadonlyArray<Record<string, unknown>>) => lines.filter((l) => l['level'] === 40 && typeof l['msg'] === 'string' && l['msg'].includes('executor'));

test("LEASEHOLD_EXECUTOR_<NAME>_KIND switches the README's loop executor to a queue: the loop-only field is ignored with one warning", async () => {
  // The README's own configuration of a loop executor (Background tasks).
  const executors = { webhooks: { kind: 'loop', concurrency: 50, queueLimit: 10_000 } } as const;
  const { runner, log } = withEnv({ LEASEHOLD_EXECUTOR_WEBHOOKS_KIND: 'queue' }, () => quiet({ executors }));
  const rows = await runner.executors();
  assert.deepEqual(rows.map((r) => [r.name, r.kind, r.concurrency]), [['webhooks', 'queue', 50]], 'a queue executor, with the concurrency the code gave');
  const warnings = executorWarnings(log.lines);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  const msg = String(warnings[0]?.['msg']);
  assert.match(msg, /LEASEHOLD_EXECUTOR_WEBHOOKS_KIND=queue/, 'names the variable');
  assert.match(msg, /queueLimit/, 'names the field');
  assert.match(msg, /executor "webhooks"/);
  await runner.stop();
});

test('a kind switched from the environment drops every field of the old kind in one warning; fields of both kinds stay', async () => {
  const executors = { mail: { kind: 'queue', concurrency: 4, timeout: '1m', attempts: 5, backoff: '2s', keepFailed: 10 } } as const;
  const { runner, log } = withEnv({ LEASEHOLD_EXECUTOR_MAIL_KIND: 'worker' }, () => quiet({ executors }));
  const rows = await runner.executors();
  assert.deepEqual(rows.map((r) => [r.name, r.kind, r.concurrency]), [['mail', 'worker', 4]]);
  const warnings = executorWarnings(log.lines);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  const msg = String(warnings[0]?.['msg']);
  for (const field of ['attempts', 'backoff', 'keepFailed']) assert.match(msg, new RegExp(field));
  assert.doesNotMatch(msg, /timeout|concurrency/, 'fields every kind has are kept');
  assert.deepEqual(warnings[0]?.['ignored'], ['attempts', 'backoff', 'keepFailed']);
  assert.equal(warnings[0]?.['variable'], 'LEASEHOLD_EXECUTOR_MAIL_KIND');
  await runner.stop();
});

test('a kind the environment does not change keeps the checks: a field of another kind in the code is still an error', () => {
  assert.throws(
    () => withEnv({ LEASEHOLD_EXECUTOR_MAIL_KIND: 'queue' }, () => quiet({ executors: { mail: { kind: 'queue', queueLimit: 5 } } })),
    (err) => isLeaseholdError(err, 'invalidExecutor') && /field "queueLimit": a queue executor keeps its queue in Redis/.test(err.message),
  );
  const { runner, log } = withEnv({ LEASEHOLD_EXECUTOR_MAIL_KIND: 'loop' }, () => quiet({ executors: { mail: { kind: 'loop', queueLimit: 5 } } }));
  assert.deepEqual(executorWarnings(log.lines), [], 'nothing switched, nothing to say');
  void runner.stop();
});

test('a field given by its own variable that the kind does not take is an error naming the variable', () => {
  assert.throws(
    () => withEnv({ LEASEHOLD_EXECUTOR_MAIL_KIND: 'queue', LEASEHOLD_EXECUTOR_MAIL_QUEUE_LIMIT: '100' }, () => quiet({ executors: { mail: {} } })),
    (err) => isLeaseholdError(err, 'invalidExecutor') && /LEASEHOLD_EXECUTOR_MAIL_QUEUE_LIMIT=100/.test(err.message) && /queue in Redis/.test(err.message),
  );
});

test('LEASEHOLD_EXECUTOR_<NAME>_MAX_HEAP_MB sets the heap limit of a worker executor\'s threads over the code\'s; on another kind it is an error naming the variable', async () => {
  const executors = { small: { kind: 'worker', concurrency: 1, resourceLimits: { maxOldGenerationSizeMb: 512, stackSizeMb: 2 } } } as const;
  const { runner } = withEnv({ LEASEHOLD_EXECUTOR_SMALL_MAX_HEAP_MB: '24' }, () => quiet({ executors }));
  runner.addTask(hog);
  await assert.rejects((await runner.submit(hog, null)).result(), (err: unknown) => isLeaseholdError(err, 'workerOutOfMemory') && /under resourceLimits \{ maxOldGenerationSizeMb: 24, stackSizeMb: 2 \}/.test(err.message));
  await runner.stop();
  assert.throws(
    () => withEnv({ LEASEHOLD_EXECUTOR_MAIL_MAX_HEAP_MB: '64' }, () => quiet({ executors: { mail: { kind: 'loop' } } })),
    (err) => isLeaseholdError(err, 'invalidExecutor') && /field "resourceLimits": applies to worker executors only \(kind: "worker"\) \(set by LEASEHOLD_EXECUTOR_MAIL_MAX_HEAP_MB=64\)/.test(err.message),
  );
  assert.throws(
    () => withEnv({ LEASEHOLD_EXECUTOR_SMALL_MAX_HEAP_MB: '1.5g' }, () => quiet({ executors })),
    (err) => isLeaseholdError(err, 'invalidExecutor') && /LEASEHOLD_EXECUTOR_SMALL_MAX_HEAP_MB=1\.5g: not a whole number of MB above 0/.test(err.message),
  );
  // Switched to a loop by its kind's variable: the threads' limits the code gave are ignored, with the warning.
  const switched = withEnv({ LEASEHOLD_EXECUTOR_SMALL_KIND: 'loop' }, () => quiet({ executors }));
  assert.deepEqual(executorWarnings(switched.log.lines).map((w) => w['ignored']), [['resourceLimits']]);
  await switched.runner.stop();
});

/** An assertion that `err` is `unknownExecutor` with a message matching every pattern. */
const unknownExecutor = (...patterns: RegExp[]) => (err: unknown): boolean => {
  assert.ok(isLeaseholdError(err), `a LeaseholdError, not ${String(err)}`);
  assert.equal(err.code, 'unknownExecutor', err.message);
  for (const p of patterns) assert.match(err.message, p);
  return true;
};

test('addTask refuses a task naming an executor nobody configured, naming the configured ones and the closest', async () => {
  const { runner, log } = quiet({ executors: { mail: { kind: 'loop', concurrency: 2 }, reports: { kind: 'loop' } } });
  assert.throws(
    () => runner.addTask(defineTask({ id: 'send-mail', executor: 'mial', run: () => 'sent' })),
    unknownExecutor(/^task "send-mail": field "executor": executor "mial" is not configured \(did you mean "mail"\?\); configured: "default", "mail", "reports"$/),
  );
  assert.throws(() => runner.addTask(defineTask({ id: 'resize', executor: 'thumbnails', run: () => 'done' })), unknownExecutor(/executor "thumbnails" is not configured; configured: "default", "mail", "reports"$/), 'no name is near: none suggested');
  // A task naming none runs on the default executor, which needs no configuration.
  runner.addTask(defineTask({ id: 'plain', run: () => 'ran' }));
  await runner.start();
  assert.equal(await (await runner.submit('plain', null)).result(), 'ran');
  assert.deepEqual((await runner.executors()).map((e) => e.name), ['default', 'mail', 'reports'], 'no executor was made for the wrong names');
  await runner.stop();
  assert.deepEqual(executorWarnings(log.lines), []);
});

test('submit of a definition never added, and an @Async method, refuse an executor nobody configured', async () => {
  const { runner } = quiet({ executors: { mail: { kind: 'loop' } } });
  await runner.start();
  await assert.rejects(runner.submit(defineTask({ id: 'send', executor: 'Mail', run: () => 'sent' }), null), unknownExecutor(/executor "Mail" is not configured \(did you mean "mail"\?\)/));
  class Mailer {
    @Async({ executor: 'mial' })
    async send(to: string): Promise<string> {
      return to;
    }
  }
  assert.throws(() => runner.register(new Mailer()), unknownExecutor(/Mailer\.send/, /executor "mial" is not configured \(did you mean "mail"\?\)/));
  await runner.stop();
});

test("an executors entry '*' is the catch-all: any other name is an executor of that configuration, tuned by its own variables", async (t) => {
  // An executor the catch-all configures reads its variables when it is first used.
  process.env['LEASEHOLD_EXECUTOR_THUMBNAILS_CONCURRENCY'] = '3';
  t.after(() => delete process.env['LEASEHOLD_EXECUTOR_THUMBNAILS_CONCURRENCY']);
  const { runner } = quiet({ executors: { '*': { concurrency: 4 }, mail: { kind: 'loop', concurrency: 2 } } });
  const thumbs = defineTask({ id: 'resize', executor: 'thumbnails', run: (n: number) => n * 2 });
  const other = defineTask({ id: 'other', executor: 'misc', run: (n: number) => n + 1 });
  runner.addTask(thumbs);
  await runner.start();
  assert.equal(await (await runner.submit(thumbs, 21)).result(), 42);
  assert.equal(await (await runner.submit(other, 1)).result(), 2, 'a definition never added runs too');
  const rows = await runner.executors();
  assert.deepEqual(rows.map((e) => [e.name, e.kind, e.concurrency]), [['mail', 'loop', 2], ['misc', 'loop', 4], ['thumbnails', 'loop', 3]]);
  await runner.stop();
  assert.throws(() => quiet({ executors: { '*': { concurrency: 0 } } }), (err) => isLeaseholdError(err, 'invalidExecutor') && /executor "\*": field "concurrency"/.test(err.message));
});

test('leasehold check refuses every task of a jobs module whose executor is not configured, and exits 1', async () => {
  const r = await runLeasehold(['check', 'test/fixtures/tasks-unknown-executor.ts']);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /task "send-mail": field "executor": executor "mial" is not configured \(did you mean "mail"\?\); configured: "default", "mail"/);
  assert.match(r.stderr, /Reports\.render.*executor "reporting" is not configured; configured: "default", "mail"/);
  assert.doesNotMatch(r.stderr, /log-line/, 'a task naming no executor runs on the default one');
});
