/**
 * What tracing costs a run: the tracer's hooks around one attempt (begin, the handler called in
 * the span's context, the log fields, end) against calling the handler bare, and what it costs
 * a task (the capture at submission, begin, the handler in the span, the end), with no
 * OpenTelemetry SDK registered (the default: every call a no-op), then with an SDK recording
 * every span to memory for comparison. Prints nanoseconds per run.
 *
 *   npx tsx bench/trace-overhead.ts [runs]
 */
import { performance } from 'node:perf_hooks';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { runTracer } from '../src/trace/tracer.js';
import { taskTracer } from '../src/trace/tasks.js';
import type { RunEndedEvent, RunStartedEvent, TaskEndedEvent } from '../src/runner/events.js';

const runs = Number(process.argv[2] ?? 200_000);
const started: RunStartedEvent = { jobId: 'bench', runId: 'r', scope: 'installation', instanceId: 'n1', scheduledAt: 0, startedAt: 0, lagMs: 0, fencingToken: 7, manual: false, attempt: 1 };
const ended: RunEndedEvent = { ...started, outcome: 'succeeded', endedAt: 1, durationMs: 1, error: undefined, cause: undefined, willRetry: false };
let sink = 0;
const handler = (): number => (sink += 1);

function bare(): void {
  for (let i = 0; i < runs; i++) handler();
}

function traced(): void {
  const hooks = runTracer();
  for (let i = 0; i < runs; i++) {
    const hook = hooks.begin(started);
    hook?.call(handler);
    hook?.logFields();
    hook?.end(ended);
  }
}

const taskEnded: TaskEndedEvent = { executor: 'default', kind: 'loop', task: 'bench', taskId: 't', instanceId: 'n1', outcome: 'succeeded', attempt: 1, durationMs: 1, error: undefined, cause: undefined, willRetry: false };

function tracedTasks(): void {
  const hooks = taskTracer();
  for (let i = 0; i < runs; i++) {
    const origin = hooks.capture();
    const hook = hooks.begin({ task: 'bench', taskId: 't', executor: 'default', kind: 'loop', instanceId: 'n1', attempt: 1, origin });
    if (hook) hook.call(handler);
    else handler();
    hooks.ended(taskEnded);
  }
}

/** The median over five rounds of ns per run (after a warm-up round). */
function measure(f: () => void): number {
  f();
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    f();
    rounds.push(((performance.now() - t0) * 1e6) / runs);
  }
  return rounds.sort((a, b) => a - b)[2] ?? NaN;
}

const base = measure(bare);
const noSdk = measure(traced);
const tasksNoSdk = measure(tracedTasks);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
const withSdk = measure(() => {
  traced();
  exporter.reset();
});
const tasksWithSdk = measure(() => {
  tracedTasks();
  exporter.reset();
});
const rows: Array<[string, number]> = [
  ['handler called bare', base],
  ['tracer hooks, no SDK registered', noSdk],
  ['tracer hooks, SDK + in-memory exporter', withSdk],
  ['task hooks, no SDK registered', tasksNoSdk],
  ['task hooks, SDK + in-memory exporter', tasksWithSdk],
];
console.log(`runs per round: ${runs} (median of 5 rounds), Node ${process.version}`);
for (const [what, ns] of rows) console.log(`${what.padEnd(40)} ${ns.toFixed(0).padStart(7)} ns/run`);
console.log(`tracing cost without an SDK: ${(noSdk - base).toFixed(0)} ns per run, ${(tasksNoSdk - base).toFixed(0)} ns per task${sink < 0 ? '' : ''}`);
