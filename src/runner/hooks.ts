/**
 * The run hooks port: what an adapter (the tracer) does around each run of a handler. The
 * runner calls `begin` as an attempt starts, runs the handler through the hook's `call` (so
 * it runs in whatever context the hook sets), adds the hook's fields to the run's log lines,
 * tells it of a lost lease, and ends it with the attempt's outcome. The runner knows no tracer.
 * @module
 */
import type { RunEndedEvent, RunStartedEvent } from './events.js';

/** Attribute values of a hook's event. */
export type HookAttributes = Readonly<Record<string, string | number | boolean>>;

/** What the runner asks of a run hooks adapter. */
export interface RunHooks {
  /** An attempt of a run starts; undefined: nothing to do around it. */
  begin(run: RunStartedEvent): RunHook | undefined;
}

/** One attempt's hook. */
export interface RunHook {
  /** Calls the handler (in the hook's context); returns what it returns. */
  call<T>(handler: () => T): T;
  /** Fields added to each line of the run's logger (`trace_id`, `span_id`), if any. */
  logFields(): Readonly<Record<string, string>> | undefined;
  /** Something happened during the run (the lease was lost). */
  event(name: string, attributes?: HookAttributes): void;
  /** The attempt ended. */
  end(run: RunEndedEvent): void;
}
