/**
 * prom-client's default process metrics (CPU, memory, event loop, handles), collected once per
 * process in a registry of their own that every runner's registry merges: they describe the
 * process, and collecting them twice would start a second event-loop monitor.
 * @module
 */
import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * How often the event-loop lag of the default process metrics is sampled, in ms. prom-client's
 * default of 10 ms wakes the process a hundred times a second, which costs an idle node more
 * CPU than its jobs do; a blocked loop still shows in full at 100 ms.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

let processRegistry: Registry | undefined;

/** The process-wide registry of prom-client's default metrics, created on first use. */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }
  return processRegistry;
}
