/**
 * OpenTelemetry spans of tasks: the task hooks (`tasks/hooks.ts`) through `@opentelemetry/api`.
 * A submission captures the active context as W3C trace context headers (through the global
 * propagator, and a `traceparent` of its own when none is registered, so that the parent is
 * kept with any SDK setup); the node that runs the task continues it, so the span
 * `task <taskId>` is a child of the span active where the task was submitted, across `await`,
 * into a worker thread, and across nodes for a queue. The span ends with the attempt's
 * `taskEnded` event: its outcome, and for a failure the error status and the exception.
 * @module
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, isSpanContextValid, propagation, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { TaskHook, TaskHooks, TaskOrigin, TaskStart } from '../tasks/hooks.js';
import type { TaskEndedEvent } from '../runner/events.js';
import { TRACER_NAME, TraceAttributes } from './tracer.js';

/** Span attribute names of tasks (beside {@link TraceAttributes}' executor, instance and outcome). */
export const TaskTraceAttributes = {
  taskId: 'leasehold.task.id',
  submissionId: 'leasehold.task.submission_id',
  attempt: 'leasehold.task.attempt',
  executor: 'leasehold.executor',
  executorKind: 'leasehold.executor.kind',
} as const;

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C headers of a context with a valid span, or undefined. */
export function captureOrigin(ctx: Context = context.active()): TaskOrigin | undefined {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  // No propagator registered (the API's default injects nothing): the traceparent itself.
  carrier['traceparent'] ??= `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & TraceFlags.SAMPLED ? 1 : 0).toString(16).padStart(2, '0')}`;
  return carrier;
}

/** The context a task's origin continues (the root when it carries none). */
export function continueOrigin(origin: TaskOrigin | undefined): Context {
  if (!origin) return ROOT_CONTEXT;
  const extracted = propagation.extract(ROOT_CONTEXT, origin);
  if (trace.getSpanContext(extracted)) return extracted;
  const m = TRACEPARENT.exec(origin['traceparent'] ?? '');
  if (!m?.[1] || !m[2] || !m[3]) return extracted;
  return trace.setSpanContext(extracted, { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16) & TraceFlags.SAMPLED, isRemote: true });
}

/** A tracer's task hooks, and the end of a task's span. */
export interface TaskTracer extends TaskHooks {
  /** An attempt ended: its span ends with the outcome. */
  ended(e: TaskEndedEvent): void;
}

const key = (executor: string, taskId: string, attempt: number): string => `${executor}\u0000${taskId}\u0000${attempt}`;

/** The task hooks of a tracer: a span per attempt, a child of the submitter's span. */
export function taskTracer(tracer: Tracer = trace.getTracer(TRACER_NAME)): TaskTracer {
  const open = new Map<string, Span>();
  return {
    capture: () => captureOrigin(),
    begin(start: TaskStart): TaskHook | undefined {
      const parent = continueOrigin(start.origin);
      const span = tracer.startSpan(`task ${start.task}`, { kind: start.kind === 'queue' ? SpanKind.CONSUMER : SpanKind.INTERNAL, attributes: { [TaskTraceAttributes.taskId]: start.task } }, parent);
      // No SDK (a span that neither records nor carries a trace): nothing to keep or to run in.
      if (!span.isRecording() && !isSpanContextValid(span.spanContext())) return undefined;
      if (span.isRecording()) {
        span.setAttributes({
          [TaskTraceAttributes.executor]: start.executor,
          [TaskTraceAttributes.executorKind]: start.kind,
          [TaskTraceAttributes.submissionId]: start.taskId,
          [TaskTraceAttributes.attempt]: start.attempt,
          [TraceAttributes.instanceId]: start.instanceId,
        });
      }
      open.set(key(start.executor, start.taskId, start.attempt), span);
      const inSpan = trace.setSpan(parent, span);
      return { call: (handler) => context.with(inSpan, handler) };
    },
    ended(e: TaskEndedEvent): void {
      if (open.size === 0) return; // no span begun (no SDK): nothing to look up
      const k = key(e.executor, e.taskId, e.attempt);
      const span = open.get(k);
      if (!span) return;
      open.delete(k);
      if (span.isRecording()) {
        span.setAttribute(TraceAttributes.outcome, e.outcome);
        if (e.outcome !== 'succeeded') {
          span.setStatus({ code: SpanStatusCode.ERROR, message: e.error ?? e.outcome });
          if (e.cause instanceof Error) span.recordException(e.cause);
          else if (e.error !== undefined) span.recordException(e.error);
        }
      }
      span.end();
    },
  };
}

/** What task tracing listens to: the runner's `taskEnded` events. */
export interface TracedTasks {
  on(event: 'taskEnded', fn: (e: TaskEndedEvent) => void): () => void;
}

/** A runner's task tracing, attached: the hooks to give the tasks layer, and its end. */
export interface AttachedTaskTracing {
  readonly hooks: TaskHooks;
  detach(): void;
}

/** Traces the tasks of a runner with the globally registered tracer provider (a no-op until an SDK registers one). */
export function attachTaskTracing(runner: TracedTasks, tracer?: Tracer): AttachedTaskTracing {
  const hooks = taskTracer(tracer);
  const off = runner.on('taskEnded', (e) => hooks.ended(e));
  return { hooks, detach: off };
}
