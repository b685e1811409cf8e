// The layers of src/ and what each may import: the one table the lint's rule judges imports
// by (scripts/eslint-layers.mjs), and so the only place to edit when a module may import
// another. docs/architecture.md draws the imports the code makes, which must all be allowed
// here (test/architecture.test.ts). A module is a folder of src/ or a file at its top.

/** Leaf modules: anything may import them; they import no other part of leasehold but errors.ts. */
export const LEAVES = ['errors', 'clock', 'logger', 'config', 'peer'];

/**
 * For each module, the modules (besides the leaves and itself) it may import, and the npm
 * packages it must not import. Lower layers first.
 */
export const LAYERS = {
  cron: { may: [], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  schedule: { may: ['cron'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  redis: { may: [], noPackages: ['fastify', 'pino', 'prom-client'] },
  lease: { may: ['redis'], noPackages: ['fastify', 'pino', 'prom-client'] },
  runner: { may: ['lease', 'schedule'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq', '@opentelemetry/api'] },
  status: { may: ['runner', 'redis', 'schedule'], noPackages: ['fastify', 'pino', 'prom-client'] },
  decorators: { may: ['schedule'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  trace: { may: ['runner', 'tasks'], noPackages: ['ioredis', 'fastify', 'pino', 'prom-client', 'bullmq'] },
  metrics: { may: ['runner'], noPackages: ['ioredis', 'fastify', 'pino'] },
  log: { may: ['runner', 'schedule'], noPackages: ['ioredis', 'fastify', 'prom-client'] },
  http: { may: ['status', 'schedule'], noPackages: ['ioredis', 'prom-client'] },
  mcp: { may: ['status', 'schedule', 'cron'], noPackages: ['ioredis', 'prom-client', 'pino'] },
  tasks: { may: ['runner', 'redis', 'schedule', 'decorators'], noPackages: ['fastify', 'pino', 'prom-client', '@opentelemetry/api'] },
  create: { may: ['decorators', 'trace', 'mcp', 'tasks', 'runner', 'lease', 'redis', 'status', 'metrics', 'log', 'http', 'schedule'], noPackages: [] },
  cli: { may: ['create', 'decorators', 'mcp', 'http', 'log', 'schedule', 'cron'], noPackages: [] },
  index: { may: ['create', 'decorators', 'tasks', 'runner', 'status', 'schedule', 'cron', 'redis'], noPackages: [] },
  require: { may: ['index'], noPackages: [] },
  nestjs: { may: ['index'], noPackages: ['express', 'fastify'] },
  express: { may: ['index'], noPackages: ['@nestjs/common', '@nestjs/core'] },
};

/**
 * The packages of the framework adapters (`leasehold/nestjs`, `leasehold/express`), optional
 * peers that an install of leasehold alone lacks: no module but the adapter's may import them.
 */
export const ADAPTER_PACKAGES = ['@nestjs/common', '@nestjs/core', 'express'];
for (const [name, layer] of Object.entries(LAYERS)) {
  if (name !== 'nestjs' && name !== 'express') layer.noPackages.push(...ADAPTER_PACKAGES);
}

/** Modules the runner may reach in `lease/`: the port and the local stand-in, not the Redis side. */
export const RUNNER_LEASE_FILES = ['port', 'local'];
