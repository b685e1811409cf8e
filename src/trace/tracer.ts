/**
 * OpenTelemetry tracing of runs, through `@opentelemetry/api` only: the application registers
 * its SDK (or none, and every call is a no-op). Each attempt of a run is a span `job <jobId>`
 * whose context the handler runs in, with the run's attributes, its outcome, an error status
 * and the exception for a failure, and events for a lost lease and for a start skipped while it
 * ran. The run's log lines carry `trace_id` and `span_id` when the span is sampled.
 * @module
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, isSpanContextValid, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { RunHook, RunHooks, HookAttributes } from '../runner/hooks.js';
import type { RunEndedEvent, RunStartedEvent, SkippedEvent } from '../runner/events.js';

/** The instrumentation scope name of leasehold's spans. */
export const TRACER_NAME = 'leasehold';

/** Span attribute names. */
export const TraceAttributes = {
  jobId: 'leasehold.job.id',
  runId: 'leasehold.run.id',
  scheduledAt: 'leasehold.run.scheduled_at',
  outcome: 'leasehold.run.outcome',
  attempt: 'leasehold.run.attempt',
  manual: 'leasehold.run.manual',
  instanceId: 'leasehold.instance.id',
  fencingToken: 'leasehold.lease.fencing_token',
  skipReason: 'leasehold.skip.reason',
} as const;

/** What the tracer listens to besides its run hooks: the scheduler's skipped starts. */
export interface TracedRunner {
  on(event: 'skipped', fn: (e: SkippedEvent) => void): () => void;
}

/** One attempt's span. */
class SpanHook implements RunHook {
  constructor(
    private readonly span: Span,
    private readonly done: () => void,
  ) {}

  call<T>(handler: () => T): T {
    // The run's parent is the root: a timer set inside an earlier run must not nest this run under it.
    return context.with(trace.setSpan(ROOT_CONTEXT, this.span), handler);
  }

  logFields(): Readonly<Record<string, string>> | undefined {
    const sc = this.span.spanContext();
    return isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : undefined;
  }

  event(name: string, attributes?: HookAttributes): void {
    this.span.addEvent(name, attributes);
  }

  end(run: RunEndedEvent): void {
    this.done();
    if (!this.span.isRecording()) return;
    this.span.setAttribute(TraceAttributes.outcome, run.outcome);
    if (run.outcome !== 'succeeded') {
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: run.error ?? run.outcome });
      const cause = run.cause;
      if (cause instanceof Error) this.span.recordException(cause);
      else if (run.error !== undefined) this.span.recordException(run.error);
    }
    this.span.end();
  }

  /** A start of this job skipped while the run goes on. */
  skipped(e: SkippedEvent): void {
    this.span.addEvent('skipped', { [TraceAttributes.skipReason]: e.reason, [TraceAttributes.scheduledAt]: new Date(e.scheduledAt).toISOString() });
  }
}

/** A tracer's run hooks, and what other listeners ask of the spans of runs in progress. */
export interface RunTracer extends RunHooks {
  /** A start of a job skipped: an event of the span of its run in progress, if any. */
  skipped(e: SkippedEvent): void;
  /** `trace_id` and `span_id` of a run (attempt) in progress, for a log line about it. */
  logFields(runId: string): Readonly<Record<string, string>> | undefined;
}

/** The run hooks of a tracer: a span per attempt. */
export function runTracer(tracer: Tracer = trace.getTracer(TRACER_NAME)): RunTracer {
  const running = new Map<string, SpanHook>();
  const byRun = new Map<string, SpanHook>();
  return {
    begin(run: RunStartedEvent): RunHook {
      // The job id at the start (for samplers); the rest only when the span records, so that
      // without an SDK a run costs no more than a few allocations (bench/trace-overhead.ts).
      const span = tracer.startSpan(`job ${run.jobId}`, { kind: SpanKind.INTERNAL, root: true, attributes: { [TraceAttributes.jobId]: run.jobId } }, ROOT_CONTEXT);
      if (span.isRecording()) {
        span.setAttributes({
          [TraceAttributes.runId]: run.runId,
          [TraceAttributes.scheduledAt]: new Date(run.scheduledAt).toISOString(),
          [TraceAttributes.instanceId]: run.instanceId,
          [TraceAttributes.attempt]: run.attempt,
          [TraceAttributes.manual]: run.manual,
          ...(run.fencingToken !== undefined ? { [TraceAttributes.fencingToken]: run.fencingToken } : {}),
        });
      }
      const hook: SpanHook = new SpanHook(span, () => {
        if (running.get(run.jobId) === hook) running.delete(run.jobId);
        byRun.delete(run.runId);
      });
      running.set(run.jobId, hook);
      byRun.set(run.runId, hook);
      return hook;
    },
    skipped(e: SkippedEvent): void {
      running.get(e.jobId)?.skipped(e);
    },
    logFields: (runId) => byRun.get(runId)?.logFields(),
  };
}

/** A runner's tracing, attached: see {@link attachTracing}. */
export interface AttachedTracing {
  /** `trace_id` and `span_id` of a run in progress (for the log listener's lines about it). */
  logFields(runId: string): Readonly<Record<string, string>> | undefined;
  /** Stops tracing. */
  detach(): void;
}

/**
 * Attaches a tracer's run hooks, which the scheduler was built with, to its events: a start
 * skipped while a run goes on becomes an event of that run's span.
 */
export function attachTracing(runner: TracedRunner, hooks: RunTracer): AttachedTracing {
  const off = runner.on('skipped', (e) => hooks.skipped(e));
  return {
    logFields: (runId) => hooks.logFields(runId),
    detach: off,
  };
}
