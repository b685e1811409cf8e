/**
 * The node's own HTTP server: fastify with the leasehold routes on a host and port (0 picks
 * a free port; the port is logged), closed on stop.
 * @module
 */
import { createServer } from 'node:net';
import Fastify, { LogController, type FastifyPluginAsync } from 'fastify';
import type { Logger } from 'pino';

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  /** Address to listen on. Default `127.0.0.1` (this machine only). */
  readonly host?: string;
  /**
   * Whether to believe a reverse proxy's `X-Forwarded-*` headers (fastify's `trustProxy`): then
   * `req.protocol` and `req.ip` are the client's, as the proxy saw them. Default false.
   */
  readonly trustProxy?: boolean | number | string;
  /** Port; 0 picks a free one. */
  readonly port: number;
  /** The routes (the status layer's `routes`). */
  readonly routes: FastifyPluginAsync;
  readonly logger: Logger;
}

/** A running server. */
export interface HttpServer {
  /** The port it listens on. */
  readonly port: number;
  /** `http://<host>:<port>`. */
  readonly url: string;
  /** Stops accepting connections and closes the open ones. */
  close(): Promise<void>;
}

function hops(n: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < n;
}

/** Starts the server; resolves once it listens. */
export async function startHttpServer(opts: HttpServerOptions): Promise<HttpServer> {
  const host = opts.host ?? '127.0.0.1';
  const app = Fastify({
    loggerInstance: opts.logger.child({ component: 'http' }),
    // One line per request is noise for probes and scrapes; errors are logged by the routes.
    logController: new LogController({ disableRequestLogging: true }),
    // Job ids are up to 128 characters.
    routerOptions: { maxParamLength: 256 },
    forceCloseConnections: true,
    return503OnClosing: true,
    // A number of proxies: the addresses of the first n hops are believed.
    trustProxy: typeof opts.trustProxy === 'number' ? hops(opts.trustProxy) : (opts.trustProxy ?? false),
  });
  await app.register(opts.routes);
  await app.listen({ host, port: opts.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : opts.port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  opts.logger.info({ host, port }, 'HTTP listening on port %d', port);
  return { port, url, close: () => app.close() };
}

/**
 * Fails as the server's listen would when `port` on `host` is taken, and lets the port go
 * again: a node checks it before it starts its jobs, so a port taken by another node does not
 * half-start it. Port 0 (any free port) always passes.
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
