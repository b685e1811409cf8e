/**
 * The Redis-backed adapters of a runner wired to it: the status layer (stats, registry,
 * settings, control), the metrics that read it, and the HTTP and MCP routes over it.
 * @module
 */
import type { FastifyPluginAsync } from 'fastify';
import { createStatusLayer, packageVersion, type StatusLayer, type StatusLayerOptions } from '../status/index.js';
import { createRunnerMetrics, type RunnerMetrics } from '../metrics/prom.js';
import { leaseholdRoutes, type ExecutorsSource, type MetricsSource } from '../http/plugin.js';
import { StatusEvents } from '../http/events.js';
import { mcpRoutes } from '../mcp/http.js';

import type { MetricsRegistry } from './options.js';

/** Options of {@link attachStatus}: the status layer's, and the tokens of the routes. */
export interface AttachStatusOptions extends Omit<StatusLayerOptions, 'onNewJob'> {
  /** The cluster's executors, for `GET /manage/executors`. */
  readonly executors?: ExecutorsSource;
  readonly adminToken?: string;
  readonly readToken?: string;
  readonly metricsToken?: string;
}

/** A runner's Redis-backed adapters, wired to it: see {@link attachStatus}. */
export interface AttachedStatus extends StatusLayer {
  /** The HTTP routes, bound to this runner: `app.register(attached.routes)`. */
  readonly routes: FastifyPluginAsync;
  /** This runner's Prometheus registry (with the process metrics). */
  readonly metrics: MetricsRegistry;
}

/**
 * Wires a runner core (`opts.core`) to the status layer (and the core to its settings), the metrics and the
 * HTTP routes. `start()` before `core.start()`; `stop()` after `core.stop()`.
 */
export function attachStatus(opts: AttachStatusOptions, runnerMetrics?: RunnerMetrics): AttachedStatus {
  const { adminToken, readToken, metricsToken, executors, ...statusOptions } = opts;
  const core = opts.core;
  const metrics = runnerMetrics ?? createRunnerMetrics(core);
  const status = createStatusLayer({
    ...statusOptions,
    onNewJob: (id) => {
      const v = core.job(id);
      if (v) metrics.addJob(id, v.job.scope);
    },
  });
  core.setSettings(status.settings);
  core.setClaimOrder(status.claimOrder);
  metrics.successDeadlines(async () => {
    const cluster = await status.api.cluster().catch(() => undefined);
    return (cluster?.jobs ?? []).map((j) => ({ jobId: j.id, dueBy: j.state === 'paused' || j.state === 'orphaned' || !j.successDueBy ? null : Date.parse(j.successDueBy) }));
  });
  const registry = metrics.registry;
  // The page's event streams end when the runner stops, before Redis is closed under them.
  const events = new StatusEvents({ api: status.api, clock: core.clock, ...(executors ? { executors } : {}), onReadError: (err) => opts.logger.debug({ err }, 'status events: reading the status failed') });
  const routes: FastifyPluginAsync = async (app) => {
    await app.register(leaseholdRoutes, {
      api: status.api,
      instanceId: core.instanceId,
      metrics: metricsSource(registry),
      events,
      ...(executors ? { executors } : {}),
      ...(adminToken ? { adminToken } : {}),
      ...(readToken ? { readToken } : {}),
      ...(metricsToken ? { metricsToken } : {}),
    });
    await app.register(mcpRoutes, { api: status.api, instanceId: core.instanceId, adminToken, readToken, now: () => core.now(), version: packageVersion(), executors });
  };
  return {
    ...status,
    routes,
    metrics: registry,
    async stop() {
      events.close();
      metrics.detach();
      await status.stop();
    },
  };
}

/** What `GET /metrics` serves, from a registry. */
export function metricsSource(registry: MetricsRegistry): MetricsSource {
  return async () => ({ contentType: registry.contentType, text: await registry.metrics() });
}
