// The layers of src/ and what each may import: the one table from which the lint's import
// rules are made (eslint.config.js) and against which docs/architecture.md's diagram is
// checked (test/architecture.test.ts). A module is a folder of src/ or a file at its top.

/** Leaf modules: anything may import them; they import no other part of leasehold but errors.ts. */
export const LEAVES = ['errors', 'clock', 'logger', 'config'];

/**
 * For each module, the modules (besides the leaves and itself) it may import, and the npm
 * packages it must not import. Lower layers first.
 */
export const LAYERS = {
  cron: { may: [], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  schedule: { may: ['cron'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  redis: { may: [], noPackages: ['fastify', 'pino', 'prom-client'] },
  lease: { may: ['redis'], noPackages: ['fastify', 'pino', 'prom-client'] },
  runner: { may: ['lease', 'schedule', 'cron'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq', '@opentelemetry/api'] },
  status: { may: ['runner', 'lease', 'redis', 'schedule', 'cron'], noPackages: ['fastify', 'pino', 'prom-client'] },
  decorators: { may: ['schedule', 'cron'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  trace: { may: ['runner', 'tasks'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  metrics: { may: ['runner'], noPackages: ['ioredis', 'fastify', 'pino'] },
  log: { may: ['runner', 'schedule'], noPackages: ['ioredis', 'fastify', 'prom-client'] },
  http: { may: ['status', 'schedule'], noPackages: ['ioredis', 'prom-client'] },
  mcp: { may: ['status', 'http', 'schedule', 'cron'], noPackages: ['ioredis', 'prom-client', 'pino'] },
  tasks: { may: ['runner', 'redis', 'schedule'], noPackages: ['fastify', 'pino', 'prom-client', '@opentelemetry/api'] },
  create: { may: ['decorators', 'trace', 'mcp', 'tasks', 'runner', 'lease', 'redis', 'status', 'metrics', 'log', 'http', 'schedule', 'cron'], noPackages: [] },
  cli: { may: ['create', 'decorators', 'mcp', 'tasks', 'status', 'redis', 'http', 'log', 'schedule', 'cron'], noPackages: [] },
  index: { may: ['create', 'decorators', 'tasks', 'runner', 'lease', 'status', 'schedule', 'cron', 'metrics', 'log', 'http', 'redis'], noPackages: [] },
};

/** Modules the runner may reach in `lease/`: the port and the local stand-in, not the Redis side. */
export const RUNNER_LEASE_FILES = ['port', 'local'];

/** Every module name: the leaves and the layers. */
export const MODULES = [...LEAVES, ...Object.keys(LAYERS)];
