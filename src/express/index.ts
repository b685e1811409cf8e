/**
 * leasehold for Express (`leasehold/express`): the runner's HTTP routes (the status, one job,
 * the admin actions, health, metrics, the status page and its event stream, and MCP) as an
 * Express middleware. The routes are the runner's own fastify plugin, unchanged: the
 * middleware hands each request to a fastify instance made for them through fastify's
 * `routing`, so the tokens, the answers and their headers are the plugin's; a request none of
 * the routes takes goes on to the rest of the Express app. Any framework that takes a
 * connect-style middleware (`(req, res, next)`) can mount it.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createRunner } from 'leasehold';
 * import { leaseholdExpress } from 'leasehold/express';
 *
 * const runner = createRunner({ redisUrl: process.env.REDIS_URL, adminToken: process.env.ADMIN_TOKEN });
 * const app = express();
 * const routes = await leaseholdExpress(runner);
 * app.use(routes);
 * ```
 *
 * @packageDocumentation
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyPluginAsync } from 'fastify';
import type { Runner } from '../index.js';

/** Options of {@link leaseholdExpress}. */
export interface LeaseholdExpressOptions {
  /** A pino logger, where the routes log a request that failed (a 500). Default: nowhere. */
  readonly logger?: FastifyBaseLogger;
}

/** The middleware: `app.use(middleware)`, or `app.use('/ops', middleware)` under a path. */
export interface LeaseholdMiddleware {
  (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void;
  /**
   * Ends the event streams of the status page and stops taking requests: call it before
   * closing the HTTP server, whose `close()` otherwise waits for the open streams.
   */
  close(): Promise<void>;
}

/** Where a request handed to fastify keeps Express's `next`. */
const NEXT = Symbol('leasehold.express.next');

type WithNext = IncomingMessage & { [NEXT]?: (err?: unknown) => void };

/**
 * The runner's routes as an Express middleware. Mount it before a body parser
 * (`express.json()`): the routes read their own bodies. A request it does not route goes to
 * `next()`.
 * @param runner - The runner (or anything with its `routes` plugin).
 * @param options - See {@link LeaseholdExpressOptions}.
 */
export async function leaseholdExpress(runner: Pick<Runner, 'routes'> | { readonly routes: FastifyPluginAsync }, options: LeaseholdExpressOptions = {}): Promise<LeaseholdMiddleware> {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : {}),
    // Job ids are up to 128 characters.
    routerOptions: { maxParamLength: 256 },
    return503OnClosing: true,
  });
  // Not one of the routes: back to Express, which answers it or calls its own 404.
  app.setNotFoundHandler((request, reply) => {
    const next = (request.raw as WithNext)[NEXT];
    void reply.hijack();
    next?.();
  });
  await app.register(runner.routes);
  await app.ready();
  const middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void => {
    Object.defineProperty(req, NEXT, { value: next, configurable: true, enumerable: false });
    if (req.readableEnded) bodyReadAlready(req);
    app.routing(req, res);
  };
  return Object.assign(middleware, { close: () => app.close() });
}

/**
 * A body parser mounted before the middleware has read the request's body: the routes then
 * see none (their admin actions take none), rather than wait for a body that will not come.
 */
function bodyReadAlready(req: IncomingMessage): void {
  delete req.headers['content-length'];
  delete req.headers['transfer-encoding'];
  delete req.headers['content-type'];
}
