/**
 * OpenTelemetry spans of tasks, read with the SDK's in-memory exporter: a span `task <id>` per
 * attempt with the task's attributes and outcome, a child of the span active where the task was
 * submitted: across `await` on a loop executor, around a worker thread, and across node
 * processes for a queue task (the consuming node writes its spans to a file).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, trace, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Async, createRunner, defineTask, isLeaseholdError, type TaskEndedEvent } from '../src/index.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { memoryLogger } from './helpers/log.js';
import { until } from './helpers/wait.js';
import { Greeter, spawnAsyncNode } from './fixtures/async/greeter.js';

const exporter = new InMemorySpanExporter();
const tracer = (): ReturnType<typeof trace.getTracer> => trace.getTracer('app');
let redis: TestRedis;

before(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  redis = await startRedis();
});
after(async () => {
  trace.disable();
  context.disable();
  await redis.stop();
});

const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);

test('a loop task is a span task <id>, a child of the span it was submitted in (after an await), with its attributes; the handler runs in it; a failure is an error', async () => {
  const runner = createRunner({ logger: memoryLogger('warn').logger, instanceId: 'trace-tasks', executors: { io: { kind: 'loop', concurrency: 1 } } });
  let inside: string | undefined;
  const fetchPage = defineTask({
    id: 'fetch-page',
    executor: 'io',
    async run(url: string) {
      await sleep(5);
      inside = trace.getActiveSpan()?.spanContext().spanId;
      return url.length;
    },
  });
  const broken = defineTask({ id: 'broken', executor: 'io', run: () => Promise.reject(new Error('no route to host')) });
  await runner.start();
  let requestSpan = '';
  let traceId = '';
  await tracer().startActiveSpan('GET /pages', async (span) => {
    requestSpan = span.spanContext().spanId;
    traceId = span.spanContext().traceId;
    await sleep(5);
    const handle = await runner.submit(fetchPage, 'https://example.com');
    assert.equal(await handle.result(), 19);
    await assert.rejects((await runner.submit(broken, null)).result(), /no route to host/);
    span.end();
  });
  // Submitted outside any span: a root span of its own.
  await (await runner.submit(fetchPage, 'x')).result();
  await runner.stop();
  const [first, second] = spans('task fetch-page');
  assert.ok(first && second);
  assert.equal(first.parentSpanContext?.spanId, requestSpan);
  assert.equal(first.spanContext().traceId, traceId);
  assert.equal(inside, second.spanContext().spanId, 'the handler runs in its span');
  assert.equal(second.parentSpanContext, undefined);
  assert.deepEqual(first.attributes, {
    'leasehold.task.id': 'fetch-page',
    'leasehold.executor': 'io',
    'leasehold.executor.kind': 'loop',
    'leasehold.task.submission_id': first.attributes['leasehold.task.submission_id'],
    'leasehold.task.attempt': 1,
    'leasehold.instance.id': 'trace-tasks',
    'leasehold.run.outcome': 'succeeded',
  });
  const [failed] = spans('task broken');
  assert.equal(failed?.parentSpanContext?.spanId, requestSpan);
  assert.equal(failed?.status.code, SpanStatusCode.ERROR);
  assert.equal(failed?.attributes['leasehold.run.outcome'], 'failed');
  assert.equal(failed?.events[0]?.name, 'exception');
});

test('a worker-thread task is a span task <id>, a child of the span it was submitted in', async () => {
  const runner = createRunner({ logger: memoryLogger('warn').logger, executors: { cpu: { kind: 'worker', concurrency: 1 } } });
  const { hash } = await import('./fixtures/tasks-worker.js');
  await runner.start();
  let parent = '';
  await tracer().startActiveSpan('POST /hash', async (span) => {
    parent = span.spanContext().spanId;
    await (await runner.submit(hash, { text: 'abc', rounds: 2 })).result();
    span.end();
  });
  await runner.stop();
  const [s] = spans('task hash');
  assert.equal(s?.parentSpanContext?.spanId, parent);
  assert.equal(s?.attributes['leasehold.executor.kind'], 'worker');
  assert.equal(s?.attributes['leasehold.run.outcome'], 'succeeded');
});

test('a queue task submitted inside a span on one node process is run by another, whose span task <id> continues the trace', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'lh-trace-')), 'spans.jsonl');
  const prefix = 'trace-q';
  const node = spawnAsyncNode({ REDIS_URL: redis.url, LEASEHOLD_PREFIX: prefix, LEASEHOLD_INSTANCE_ID: 'consumer', NODE_NAME: 'consumer', SPANS: file });
  try {
    await until('the consuming node to start', () => node.out().includes('ready'), 20_000);
    const runner = createRunner({ redisUrl: redis.url, prefix, logger: memoryLogger('warn').logger, executors: { greetings: { kind: 'queue' } } });
    const greeter = new Greeter();
    runner.register(greeter);
    let parent = { traceId: '', spanId: '' };
    await tracer().startActiveSpan('POST /greet', async (span) => {
      parent = span.spanContext();
      assert.equal(await greeter.greet('grace'), 'hello grace from consumer');
      span.end();
    });
    await runner.stop();
    await until('the consumer to export its span', () => existsSync(file) && readFileSync(file, 'utf8').includes('task Greeter.greet'), 10_000);
    const exported = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { name: string; traceId: string; parentSpanId?: string; attributes: Record<string, unknown> });
    const task = exported.find((s) => s.name === 'task Greeter.greet');
    assert.equal(task?.traceId, parent.traceId, 'the same trace');
    assert.equal(task?.parentSpanId, parent.spanId, 'a child of the submitting span');
    assert.equal(task?.attributes['leasehold.instance.id'], 'consumer');
    assert.equal(task?.attributes['leasehold.executor'], 'greetings');
    assert.equal(task?.attributes['leasehold.run.outcome'], 'succeeded');
  } finally {
    node.child.kill('SIGTERM');
    await node.exited;
  }
});

test('a fire-and-forget @Async call its executor refuses (queue full) is logged once, counted and a span under its caller, never an unhandled rejection; an awaiting caller still gets the error', async () => {
  const log = memoryLogger('warn');
  const runner = createRunner({ logger: log.logger, instanceId: 'trace-refused', shutdownGrace: '200ms', executors: { tight: { kind: 'loop', concurrency: 1, queueLimit: 1 } } });
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown): void => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  const ended: TaskEndedEvent[] = [];
  runner.on('taskEnded', (e) => ended.push(e));
  class Mailer {
    @Async({ executor: 'tight' })
    async send(to: string): Promise<string> {
      await sleep(200);
      return to;
    }
  }
  const mailer = new Mailer();
  runner.register(mailer);
  await runner.start();
  let callerSpan = '';
  let awaited: unknown;
  await tracer().startActiveSpan('nightly batch', async (span) => {
    callerSpan = span.spanContext().spanId;
    // One runs, one waits, the next two are refused: nobody awaits three of them.
    void mailer.send('a');
    void mailer.send('b');
    void mailer.send('c');
    awaited = await mailer.send('d').catch((err: unknown) => err);
    span.end();
  });
  await until('every call ended', () => ended.filter((e) => e.task === 'Mailer.send').length >= 4);
  await sleep(50);
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, [], 'no unhandled rejection');
  assert.ok(isLeaseholdError(awaited, 'queueFull'), 'the caller that awaits gets the refusal');
  const refused = ended.filter((e) => e.task === 'Mailer.send' && e.outcome === 'failed');
  assert.equal(refused.length, 2, 'each refused call is a failed attempt of its task');
  assert.match(refused[0]?.error ?? '', /executor "tight"/);
  const warnings = log.lines.filter((l) => l['task'] === 'Mailer.send' && l['level'] === 40);
  assert.equal(warnings.length, 1, 'the first failure is logged, not the repeat');
  const metrics = await runner.metrics.metrics();
  assert.match(metrics, /^leasehold_tasks_total\{executor="tight",task="Mailer.send",outcome="failed"\} 2$/m);
  const failedSpans = spans('task Mailer.send').filter((s) => s.status.code === SpanStatusCode.ERROR);
  assert.equal(failedSpans.length, 2, 'each refused call is a span with the error');
  for (const s of failedSpans) assert.equal(s.parentSpanContext?.spanId, callerSpan, 'a child of the caller\'s span');
  await runner.stop();
});
