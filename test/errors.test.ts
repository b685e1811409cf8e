/**
 * The contract of the error codes (STYLE "Errors"; fastify's test/internals/errors.test.js
 * checks its own the same way): one list in errors.ts declares every code once with its
 * meaning, what to do, its statuses and its message template; every code is unique, camelCase
 * and spelled as its key, documented, raised somewhere in src/ and always through
 * `ErrorCodes`, never removed; each template is filled by its helper; the abort reasons are a
 * subset of the codes; the error reference's table (docs/reference/errors.md) is the one rendered from the list. Then each
 * code split from a coarser one is raised through the public API (the CLI's cases run the built
 * CLI: `npm run build` first).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ERRORS, exitStatus, leaseholdError, renderErrorTable, type ErrorDescription, type TemplatedCode } from '../src/errors.js';
import { AbortReasonCodes, Async, ErrorCodes, LeaseholdError, Scheduled, createRunner, defineTask, isLeaseholdError, type ErrorCode, type JobContext, type Logger } from '../src/index.js';
import { memoryLogger } from './helpers/log.js';
import { runLeasehold } from './helpers/node.js';
import { exits, hog, small, uncloneable } from './fixtures/tasks-worker.js';

const srcDir = new URL('../src', import.meta.url).pathname;
const errorsFile = join(srcDir, 'errors.ts');
const codes: string[] = Object.values(ErrorCodes);
const list: ReadonlyArray<[string, ErrorDescription]> = Object.entries(ERRORS);

/**
 * Every code users may match on. A code is never removed (nor later given another meaning), so
 * each stays in ErrorCodes; a new code is added here too.
 */
const PUBLISHED = [
  'invalidCron', 'invalidZone', 'invalidDuration', 'invalidJob', 'duplicateJob', 'invalidConfig', 'invalidModule', 'invalidState',
  'timeout', 'lockLost', 'shutdown', 'cancelled', 'redisError', 'invalidTask', 'queueFull', 'unknownTask',
  'duplicateTask', 'invalidPayload', 'invalidExecutor', 'redisRequired', 'invalidDecorator', 'invalidRedisTarget', 'invalidToken',
  'workerFailed', 'unknownExecutor', 'missingPeer', 'workerOutOfMemory', 'corruptState', 'corruptSettings', 'invalidQuery',
];

/** Codes that no module of src/ raises yet, each with the reason it is kept. */
const NOT_RAISED: Readonly<Record<string, string>> = {};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every `.ts` file of src/ but errors.ts, with its text. */
const others = sources(srcDir)
  .filter((f) => f !== errorsFile)
  .map((file) => ({ file: relative(srcDir, file), text: readFileSync(file, 'utf8') }));

/** The names in a template, in order. */
const slots = (template: string): string[] => [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);

test('ErrorCodes is made from the list: every code unique, camelCase, and spelled as its key', () => {
  assert.deepEqual(Object.keys(ErrorCodes), Object.keys(ERRORS), 'one code per entry of the list, in its order');
  assert.equal(new Set(codes).size, codes.length, 'no two keys share a code');
  for (const [key, code] of Object.entries(ErrorCodes)) {
    assert.equal(code, key, `ErrorCodes.${key} is spelled as its key`);
    assert.match(code, /^[a-z][a-zA-Z0-9]*$/, `${code} is camelCase`);
  }
  const lower = codes.map((c) => c.toLowerCase());
  assert.equal(new Set(lower).size, codes.length, 'no two codes differ only in case');
  assert.ok(Object.isFrozen(ErrorCodes), 'ErrorCodes cannot be changed at run time');
});

test('no published code is removed, and a new code is published here when it is added', () => {
  for (const code of PUBLISHED) assert.ok(codes.includes(code), `${code} was published: it stays, with its meaning`);
  for (const code of codes) assert.ok(PUBLISHED.includes(code), `${code} is new: add it to PUBLISHED`);
});

test('every code is documented once: a meaning and what to do, written nowhere else in src/', () => {
  for (const [code, e] of list) {
    assert.ok(e.meaning.trim().length > 0 && e.action.trim().length > 0, code);
    assert.match(e.meaning, /[.)]$/, `${code}: the meaning is a sentence`);
    assert.match(e.action, /[.)]$/, `${code}: what to do is a sentence`);
    assert.ok(!/\|/.test(e.meaning + e.action + (e.message ?? '')), `${code}: no "|" (it would break the table)`);
    for (const { file, text } of others) assert.ok(!text.includes(e.meaning), `${file} repeats the meaning of ${code}: say it once, in errors.ts`);
  }
});

test('the codes split from coarser ones name codes that exist, other than their own', () => {
  for (const [code, e] of list) {
    for (const old of e.was ?? []) {
      assert.ok(codes.includes(old), `${code}: was ${old}, which is a code`);
      assert.notEqual(old, code);
    }
  }
});

test('the HTTP and exit statuses in the list are valid, and the CLI exits with them', () => {
  for (const [code, e] of list) {
    if (e.http !== undefined) assert.ok(Number.isInteger(e.http) && e.http >= 400 && e.http <= 599, `${code}: HTTP ${e.http} is an error status`);
    if (e.exit !== undefined) assert.ok(Number.isInteger(e.exit) && e.exit >= 1 && e.exit <= 125, `${code}: exit ${e.exit} is a failure a shell can read`);
    assert.equal(exitStatus(new LeaseholdError(code as ErrorCode, 'x')), e.exit ?? 1, code);
  }
  assert.equal(exitStatus(new Error('not ours')), 1);
  assert.equal(ERRORS.redisError.http, 503, 'a route that meets a Redis failure answers 503');
  for (const code of ['invalidConfig', 'invalidCron', 'invalidZone'] as const) assert.equal(exitStatus(new LeaseholdError(code, 'x')), 2, `${code} is a usage error`);
});

test('every template holds only {name} slots, and the helper fills each one with the value given', () => {
  const templated = list.filter(([, e]) => e.message !== undefined);
  assert.ok(templated.length > 0);
  for (const [code, e] of templated) {
    const template = e.message ?? '';
    const names = slots(template);
    assert.ok(names.length > 0, `${code}: a template with no slot is a fixed message; give it its values`);
    assert.equal(new Set(names).size, names.length, `${code}: each slot appears once`);
    assert.doesNotMatch(template.replace(/\{\w+\}/g, ''), /[{}]/, `${code}: no brace but the slots`);
    const values = Object.fromEntries(names.map((n, i) => [n, `<${n}#${i}>`]));
    const cause = new Error('below');
    const err = leaseholdError(code as TemplatedCode, values as never, { cause });
    assert.ok(isLeaseholdError(err, code as ErrorCode));
    assert.equal(err.cause, cause);
    assert.equal(err.message, names.reduce((m, n) => m.replace(`{${n}}`, String(values[n])), template));
    assert.doesNotMatch(err.message, /\{\w+\}/, `${code}: every slot is filled`);
  }
});

test('the helper is typed by the template: each slot must be given, and only a templated code is taken', () => {
  const err = leaseholdError(ErrorCodes.duplicateJob, { job: '"nightly"' });
  assert.equal(err.message, 'job "nightly": field "id": another job has the same id');
  assert.equal(leaseholdError(ErrorCodes.queueFull, { executor: '"mail"', task: '"send"', queued: 3, limit: 3 }).message, 'executor "mail": task "send" not accepted, 3 tasks wait already (queueLimit 3)');
  // Compiled by `npm run check`, never called: tsc refuses each marked line.
  const refused = (): unknown[] => [
    // @ts-expect-error -- a slot left out
    leaseholdError(ErrorCodes.invalidZone, { zone: '"Mars/Olympus"' }),
    // @ts-expect-error -- a slot the template does not have
    leaseholdError(ErrorCodes.duplicateJob, { job: '"a"', other: '"b"' }),
    // @ts-expect-error -- a code whose message has no fixed shape
    leaseholdError(ErrorCodes.invalidModule, {}),
  ];
  assert.equal(typeof refused, 'function');
});

test('every code is used somewhere in src/, except the ones listed with a reason', () => {
  const used = new Set<string>();
  for (const { text } of others) for (const m of text.matchAll(/\bErrorCodes\.(\w+)/g)) used.add(m[1] as string);
  for (const key of used) assert.ok(key in ErrorCodes, `ErrorCodes.${key} is a code`);
  for (const code of codes) {
    if (code in NOT_RAISED) assert.ok(!used.has(code), `${code} is used now: take it off NOT_RAISED`);
    else assert.ok(used.has(code), `${code} is used nowhere in src/: raise it, or keep it listed with a reason (codes are never reused)`);
  }
  for (const code of Object.keys(NOT_RAISED)) assert.ok(codes.includes(code), `NOT_RAISED lists ${code}, which is no code`);
});

test('src/ names a code only through ErrorCodes, never as a string literal', () => {
  const literal = `['"\`]`;
  const patterns = [
    new RegExp(`\\b[Ll]easeholdError\\(\\s*${literal}`),
    new RegExp(`\\bisLeaseholdError\\([^,()]*,\\s*${literal}`),
    // Our codes are camelCase; Node's own (`'ENOENT'`) are upper case and may be compared.
    new RegExp(`\\.code\\s*[!=]==?\\s*${literal}[a-z]`),
    new RegExp(`\\.abort\\(\\s*${literal}`),
    new RegExp(`\\bERRORS\\[\\s*${literal}`),
  ];
  const wrong: string[] = [];
  for (const { file, text } of others) {
    text.split('\n').forEach((line, i) => {
      if (patterns.some((p) => p.test(line))) wrong.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(wrong, []);
});

test('the abort reasons are a subset of the codes: the ones whose meaning says "an abort reason"', () => {
  assert.equal(new Set(AbortReasonCodes).size, AbortReasonCodes.length);
  for (const reason of AbortReasonCodes) assert.ok(codes.includes(reason), `${reason} is a code`);
  const documented = list.filter(([, e]) => e.meaning.includes('(an abort reason)')).map(([c]) => c);
  assert.deepEqual([...AbortReasonCodes].sort(), documented.sort());
});

test('the error reference\'s table is the one errors.ts renders (run `npx tsx scripts/docs-tables.ts` to refresh it)', () => {
  const page = readFileSync(new URL('../docs/reference/errors.md', import.meta.url), 'utf8');
  const m = /<!-- error-table:start -->\n([\s\S]*?)\n<!-- error-table:end -->/.exec(page);
  assert.ok(m, 'docs/reference/errors.md has the error-table markers');
  assert.equal(m[1], renderErrorTable());
  for (const [code, e] of list) {
    const row = m[1].split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
    assert.ok(row, `the table has a row for ${code}`);
    assert.ok(row.includes(e.meaning) && row.includes(e.action), `${code}: its row says its meaning and what to do`);
    if (e.http !== undefined) assert.ok(row.includes(`HTTP ${e.http}`), `${code}: its row gives its HTTP status`);
    if (e.exit !== undefined) assert.ok(row.includes(`exit ${e.exit}`), `${code}: its row gives its exit status`);
    for (const old of e.was ?? []) assert.ok(row.includes(`\`${old}\``), `${code}: its row names ${old}, the code its cases had before`);
  }
});

test('a LeaseholdError carries its code, and isLeaseholdError tells codes apart', () => {
  const cause = new Error('below');
  const err = new LeaseholdError(ErrorCodes.invalidCron, 'Invalid cron expression "x": it is empty', { cause });
  assert.equal(err.name, 'LeaseholdError');
  assert.equal(err.code, 'invalidCron');
  assert.equal(err.cause, cause);
  assert.ok(err instanceof Error);
  assert.ok(isLeaseholdError(err));
  assert.ok(isLeaseholdError(err, ErrorCodes.invalidCron));
  assert.ok(!isLeaseholdError(err, ErrorCodes.invalidZone));
  assert.ok(!isLeaseholdError(new Error('x')));
});

// Each code split from a coarser one, raised through the public API.

/** A runner without Redis that logs nowhere. */
const quietRunner = (opts: Parameters<typeof createRunner>[0] = {}): ReturnType<typeof createRunner> => createRunner({ logger: memoryLogger('silent').logger, ...opts });

/** An assertion that `err` carries `code` and a message matching `message`. */
const hasCode = (code: ErrorCode, message: RegExp) => (err: unknown): boolean => {
  assert.ok(isLeaseholdError(err), `a LeaseholdError, not ${String(err)}`);
  assert.equal(err.code, code, err.message);
  assert.match(err.message, message);
  return true;
};

test('duplicateTask: a second task with the id of one added, or two @Async methods given one id', () => {
  const runner = quietRunner();
  runner.addTask(defineTask({ id: 'send', run: () => 'sent' }));
  assert.throws(() => runner.addTask(defineTask({ id: 'send', run: () => 'again' })), hasCode(ErrorCodes.duplicateTask, /^task "send": field "id": another task has the same id$/));
  class Mailer {
    @Async({ id: 'mail.send' })
    async send(): Promise<void> {}
    @Async({ id: 'mail.send' })
    async resend(): Promise<void> {}
  }
  assert.throws(() => quietRunner().register(new Mailer()), hasCode(ErrorCodes.duplicateTask, /task "mail\.send" \(Mailer\.resend\): field "id": Mailer\.send has the same id/));
});

test('invalidPayload: a payload a worker thread cannot receive is refused at submit', async () => {
  const runner = quietRunner({ executors: { cpu: { kind: 'worker', concurrency: 1 } } });
  const hash = defineTask({ id: 'hash', executor: 'cpu', module: import.meta.url, run: (text: unknown) => String(text) });
  runner.addTask(hash);
  await assert.rejects(runner.submit(hash, { text: 'x', onDone: () => undefined }), hasCode(ErrorCodes.invalidPayload, /^task "hash" on worker executor "cpu": its payload cannot be passed to a worker thread: .*could not be cloned/));
  await runner.stop();
});

test('invalidExecutor: an executor configured wrong, in the options or in its environment variable, stops the runner at its creation', () => {
  assert.throws(() => quietRunner({ executors: { mail: { kind: 'loop', concurrency: 0 } } }), hasCode(ErrorCodes.invalidExecutor, /^executor "mail": field "concurrency": 0 must be a whole number from 1 to 10000$/));
  process.env['LEASEHOLD_EXECUTOR_MAIL_KIND'] = 'fiber';
  try {
    assert.throws(() => quietRunner({ executors: { mail: { concurrency: 2 } } }), hasCode(ErrorCodes.invalidExecutor, /^executor "mail": field "kind": "fiber" is not an executor kind/));
  } finally {
    delete process.env['LEASEHOLD_EXECUTOR_MAIL_KIND'];
  }
});

test('unknownExecutor: a task naming an executor nobody configured is refused, naming the configured ones and the closest', () => {
  const runner = quietRunner({ executors: { mail: { kind: 'loop' } } });
  assert.throws(
    () => runner.addTask(defineTask({ id: 'send', executor: 'mial', run: () => 'sent' })),
    hasCode(ErrorCodes.unknownExecutor, /^task "send": field "executor": executor "mial" is not configured \(did you mean "mail"\?\); configured: "default", "mail"$/),
  );
  const open = quietRunner({ executors: { '*': {} } });
  assert.doesNotThrow(() => open.addTask(defineTask({ id: 'send', executor: 'mial', run: () => 'sent' })), "a catch-all entry '*' takes any name");
});

test('redisRequired: a runner without Redis asked for the status, or for a task on a queue executor', async () => {
  const runner = quietRunner({ executors: { durable: { kind: 'queue' } } });
  await assert.rejects(runner.status(), hasCode(ErrorCodes.redisRequired, /^the job status needs Redis, and this runner has none: configure redisUrl, redisClusterNodes, redisSentinels or redis/));
  assert.throws(() => runner.addTask(defineTask({ id: 'archive', executor: 'durable', run: () => undefined })), hasCode(ErrorCodes.redisRequired, /^task "archive": the queue executor "durable" needs Redis/));
  await runner.stop();
});

test('invalidDecorator: a decorator where it cannot work, or register given no decorated instance', () => {
  const runner = quietRunner();
  assert.throws(() => runner.register({ id: 'not-a-class' }), hasCode(ErrorCodes.invalidDecorator, /^register: class Object has no @Scheduled or @Async method$/));
  assert.throws(() => {
    class Sweeper {
      @Scheduled({ fixedRate: '1m' })
      static sweep(): void {}
    }
    return Sweeper;
  }, hasCode(ErrorCodes.invalidDecorator, /Sweeper\.sweep": field "@Scheduled": a scheduled method must be a public instance method/));
  class Report {
    // @ts-expect-error -- TypeScript refuses it too; plain JavaScript meets the runtime check
    @Scheduled({ fixedRate: '1h' })
    async build(ctx: JobContext, format: string): Promise<string> {
      return `${ctx.jobId} ${format}`;
    }
  }
  assert.throws(() => runner.register(new Report()), hasCode(ErrorCodes.invalidDecorator, /^job "Report\.build": field "parameters": the method declares 2 parameters/));
  assert.deepEqual(runner.jobs(), [], 'nothing is added');
});

test('invalidConfig: a logger that is not a pino logger (false, the console) is refused at creation, naming what it lacks', () => {
  assert.throws(() => createRunner({ logger: false as unknown as Logger }), hasCode(ErrorCodes.invalidConfig, /^logger must be a pino logger \(error, warn, info, debug, child and isLevelEnabled\), got false; a logger at level "silent" writes nothing$/));
  assert.throws(() => createRunner({ logger: console as unknown as Logger }), hasCode(ErrorCodes.invalidConfig, /^logger must be a pino logger .*, got an object without child, isLevelEnabled;/));
});

test('invalidRedisTarget: a Redis URL that cannot be read, or two Redis settings at once; the CLI exits 2 and never shows the password', async () => {
  assert.throws(() => quietRunner({ redisUrl: 'http://app:s3cret-pw@cache:6379' }), hasCode(ErrorCodes.invalidRedisTarget, /^Redis url "http:\/\/app:\*\*\*@cache:6379" has scheme "http:"/));
  assert.throws(() => quietRunner({ redisUrl: 'redis://a:1', redisClusterNodes: ['a:1'] }), hasCode(ErrorCodes.invalidRedisTarget, /^give only one of redisUrl, redisClusterNodes, redisSentinels and redis, not redisUrl and redisClusterNodes$/));
  const status = await runLeasehold(['status'], { REDIS_URL: 'http://app:s3cret-pw@cache:6379' });
  assert.equal(status.code, 2, status.stderr);
  assert.match(status.stderr, /^leasehold status: Redis url "http:\/\/app:\*\*\*@cache:6379" has scheme "http:"/);
  assert.doesNotMatch(status.stderr, /s3cret-pw/);
});

test('invalidToken: a token no Authorization header can carry, named by its setting and never shown; the CLI exits 2', async () => {
  assert.throws(() => quietRunner({ readToken: 'open sesame' }), hasCode(ErrorCodes.invalidToken, /^readToken: only printable ASCII without spaces fits in "Authorization: Bearer <token>" \(the value is not shown\)$/));
  const start = await runLeasehold(['start', '--jobs', 'test/fixtures/jobs-valid.ts', '--port', '0'], { LEASEHOLD_ADMIN_TOKEN: 'open sesame' });
  assert.equal(start.code, 2, start.stderr);
  assert.equal(start.stderr, 'leasehold: LEASEHOLD_ADMIN_TOKEN: only printable ASCII without spaces fits in "Authorization: Bearer <token>" (the value is not shown)\n');
});

test('workerFailed: a worker thread that ends instead of answering, or answers what cannot be copied back; the node lives on', async () => {
  const runner = quietRunner({ executors: { cpu: { kind: 'worker', concurrency: 1 } } });
  runner.addTask(exits);
  runner.addTask(uncloneable);
  await assert.rejects((await runner.submit(exits, null)).result(), hasCode(ErrorCodes.workerFailed, /^task "exits" on worker executor "cpu": the worker thread failed: .*code: 3/));
  await assert.rejects((await runner.submit(uncloneable, null)).result(), hasCode(ErrorCodes.workerFailed, /^task "uncloneable" on worker executor "cpu": the worker thread failed: its answer could not be copied back/));
  await runner.stop();
});

test('workerOutOfMemory: a worker thread that reaches its resourceLimits (before: workerFailed); the node lives on', async () => {
  const runner = quietRunner({ executors: { small: { kind: 'worker', concurrency: 1, resourceLimits: { maxOldGenerationSizeMb: 24 } } } });
  runner.addTask(hog);
  runner.addTask(small);
  await assert.rejects((await runner.submit(hog, null)).result(), hasCode(ErrorCodes.workerOutOfMemory, /^task "hog" on worker executor "small": the worker thread ran out of memory under resourceLimits \{ maxOldGenerationSizeMb: 24 \}; the thread was ended, the node goes on$/));
  assert.equal(await (await runner.submit(small, 10)).result(), 10);
  await runner.stop();
});
