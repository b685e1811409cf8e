/**
 * OpenTelemetry spans of runs, read with the SDK's in-memory exporter: a span `job <id>` per
 * attempt with the run's attributes, the handler inside its context across `await`, an error
 * status and the exception for a failure, a skipped start and a lost lease as events, and
 * trace_id/span_id on the run's log lines. Real Redis for the installation job.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, trace, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createRunner, type JobContext } from '../src/index.js';
import { keys } from '../src/redis/keys.js';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { memoryLogger } from './helpers/log.js';
import { until } from './helpers/wait.js';

const exporter = new InMemorySpanExporter();
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

const spansOf = (jobId: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === `job ${jobId}`);

test('each run is a span job <id> with its attributes (each attempt of a retry its own); the handler runs in it across await and its log lines carry the ids', async () => {
  const log = memoryLogger('info');
  const runner = createRunner({ local: true, logger: log.logger, instanceId: 'trace-a' });
  const seen: Array<{ runId: string; spanId: string | undefined; traceId: string | undefined }> = [];
  runner.add({
    id: 'traced',
    fixedRate: '100ms',
    async run(ctx: JobContext) {
      await sleep(5);
      const sc = trace.getActiveSpan()?.spanContext();
      seen.push({ runId: ctx.runId, spanId: sc?.spanId, traceId: sc?.traceId });
      ctx.log.info('inside the run');
    },
  });
  runner.add({
    id: 'failing',
    fixedRate: '100ms',
    run() {
      throw new Error('the report failed');
    },
  });
  let calls = 0;
  runner.add({
    id: 'retried',
    fixedRate: '1h',
    retry: { attempts: 2, backoff: '10ms' },
    run() {
      if (++calls === 1) throw new Error('first attempt fails');
    },
  });
  await runner.start();
  await until('two traced runs and two failed', () => spansOf('traced').length >= 2 && spansOf('failing').length >= 2 && spansOf('retried').length >= 2, 5_000);
  await runner.stop();

  const span = spansOf('traced')[0];
  assert.ok(span);
  const a = span.attributes;
  assert.equal(a['leasehold.job.id'], 'traced');
  assert.equal(a['leasehold.instance.id'], 'trace-a');
  assert.equal(a['leasehold.run.outcome'], 'succeeded');
  assert.equal(typeof a['leasehold.run.scheduled_at'], 'string');
  assert.equal(a['leasehold.lease.fencing_token'], undefined, 'an instance job holds no lease');
  assert.equal(span.parentSpanContext, undefined, 'a run is a root span');
  const mine = seen.find((s) => s.runId === a['leasehold.run.id']);
  assert.ok(mine, 'the span carries the run id');
  assert.equal(mine.spanId, span.spanContext().spanId, 'the handler ran inside the span, after an await');
  const line = log.lines.find((l) => l['msg'] === 'inside the run' && l['runId'] === mine.runId);
  assert.equal(line?.['trace_id'], span.spanContext().traceId);
  assert.equal(line?.['span_id'], span.spanContext().spanId);

  const failed = spansOf('failing')[0];
  assert.ok(failed);
  assert.equal(failed.status.code, SpanStatusCode.ERROR);
  assert.equal(failed.status.message, 'the report failed');
  assert.equal(failed.attributes['leasehold.run.outcome'], 'failed');
  const exception = failed.events.find((e) => e.name === 'exception');
  assert.equal(exception?.attributes?.['exception.message'], 'the report failed');
  const warned = log.lines.find((l) => l['jobId'] === 'failing' && l['outcome'] === 'failed');
  const warnedSpan = spansOf('failing').find((sp) => sp.attributes['leasehold.run.id'] === warned?.['runId']);
  assert.ok(warned && warnedSpan, 'the node logged the failure');
  assert.equal(warned['trace_id'], warnedSpan.spanContext().traceId, "the node's line about the failed run carries its trace");
  assert.equal(warned['span_id'], warnedSpan.spanContext().spanId);

  const attempts = spansOf('retried').map((sp) => [sp.attributes['leasehold.run.attempt'], sp.attributes['leasehold.run.outcome'], sp.status.code]);
  assert.deepEqual(attempts, [[1, 'failed', SpanStatusCode.ERROR], [2, 'succeeded', SpanStatusCode.UNSET]], 'each attempt is a span of its own');
});

test('an installation run carries its fencing token; a skipped start and a lost lease are events of the run span', async () => {
  const prefix = 'trace';
  const runner = createRunner({ logger: memoryLogger('error').logger, redisUrl: redis.url, prefix, instanceId: 'trace-b', shutdownGrace: '200ms' });
  runner.add({
    id: 'leased',
    scope: 'installation',
    fixedRate: '200ms',
    lease: '400ms',
    timeout: '10s',
    run: (ctx: JobContext) =>
      new Promise((_, reject) => {
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
      }),
  });
  await runner.start();
  const admin = redis.client();
  try {
    // Let it overrun a start or two, then take the lease away.
    await sleep(700);
    await admin.del(keys(prefix).lease('leased'));
    await until('the run ended', () => spansOf('leased').length >= 1, 5_000);
  } finally {
    await runner.stop();
  }
  const span = spansOf('leased')[0];
  assert.ok(span);
  assert.equal(typeof span.attributes['leasehold.lease.fencing_token'], 'number');
  assert.equal(span.attributes['leasehold.run.outcome'], 'lockLost');
  assert.equal(span.status.code, SpanStatusCode.ERROR);
  const names = span.events.map((e) => e.name);
  assert.ok(names.includes('skipped'), names.join(','));
  assert.equal(span.events.find((e) => e.name === 'skipped')?.attributes?.['leasehold.skip.reason'], 'overrun');
  assert.ok(names.includes('lease lost'), names.join(','));
});

test("an installation job's failure and recovery lines, which the installation's streak decides after the run's record, carry the run's trace", async () => {
  const log = memoryLogger('info');
  const runner = createRunner({ logger: log.logger, redisUrl: redis.url, prefix: 'trace-streak', instanceId: 'trace-c', shutdownGrace: '200ms' });
  let calls = 0;
  runner.add({
    id: 'flaky-installation',
    scope: 'installation',
    fixedRate: '300ms',
    run() {
      if (++calls === 1) throw new Error('the first run fails');
    },
  });
  await runner.start();
  const said = (outcome: string) => log.lines.find((l) => l['jobId'] === 'flaky-installation' && l['outcome'] === outcome && Number(l['level']) >= 30);
  try {
    await until('the failure and the recovery logged', () => said('failed') !== undefined && said('succeeded') !== undefined, 10_000);
  } finally {
    await runner.stop();
  }
  for (const outcome of ['failed', 'succeeded']) {
    const line = said(outcome);
    const span = spansOf('flaky-installation').find((sp) => sp.attributes['leasehold.run.id'] === line?.['runId']);
    assert.ok(line && span, `the ${outcome} run's span: ${JSON.stringify(line)}`);
    assert.equal(line['trace_id'], span.spanContext().traceId, `the ${outcome} line carries its trace`);
    assert.equal(line['span_id'], span.spanContext().spanId);
  }
});
