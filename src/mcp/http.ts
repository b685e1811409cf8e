/**
 * The MCP tools over Streamable HTTP at `POST /mcp`, as a fastify plugin mounted beside the
 * status routes on every node. Stateless: each request gets its own server and transport
 * (the SDK's stateless mode), answered as JSON. Reads follow the read token as `GET /manage/*`
 * does; the tools that change jobs need the admin token as `Authorization: Bearer`.
 * @module
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ExecutorsSource, ManageApi } from '../status/api.js';
import { isLeaseholdError } from '../errors.js';
import { loadMcp, type McpModules } from './load.js';
import { originAllowed } from './origin.js';

/** The answer of a token check: allowed, or the status and message to refuse with (`wrong`: a token offered that is not it). */
export type AccessDecision = { readonly ok: true } | { readonly ok: false; readonly status: number; readonly message: string; readonly wrong?: boolean };

/** The token checks of the tools, as the status routes make them (handed in by the composition root). */
export interface McpAccess {
  /** Checks a read by its `Authorization` header (the read token's rule). */
  read(authorization: string | undefined): AccessDecision;
  /** Checks a change of jobs by its `Authorization` header (the admin token's rule). */
  admin(authorization: string | undefined): AccessDecision;
  /** Whether an admin token is configured at all. */
  readonly adminConfigured: boolean;
  /** Whether reads need a token. */
  readonly readProtected?: boolean;
}

/** Where failed token attempts are counted (the status routes' counter, handed in). */
export interface McpFailures {
  /** Seconds until the client may try again; 0 when it may now. */
  retryAfter(client: string): number;
  fail(client: string, route: string): void;
}

/** Options of {@link mcpRoutes}. */
export interface McpRoutesOptions {
  readonly api: ManageApi;
  /** The header that names the node on every answer, as on every route, and this node's id in it. */
  readonly nodeHeader: { readonly name: string; readonly value: string };
  readonly access: McpAccess;
  readonly now: () => number;
  readonly version: string;
  /** The cluster's executors, for `list_executors`. */
  readonly executors?: ExecutorsSource | undefined;
  /** Browser origins allowed beside the loopback ones (checked, as `new URL(o).origin`). */
  readonly allowedOrigins?: readonly string[];
  /** Where failed token attempts are counted, as on the status routes. */
  readonly failures?: McpFailures;
}

/** Why a caller may not change jobs, from the admin token's check; undefined when it may. */
export function mutationRefusal(decision: AccessDecision, adminConfigured: boolean): string | undefined {
  if (decision.ok) return undefined;
  if (!adminConfigured) return 'no admin token is configured on this node (LEASEHOLD_ADMIN_TOKEN), so the tools that change jobs are disabled';
  if (decision.status === 401 && decision.message.startsWith('an Authorization')) return 'the tools that change jobs need the admin token: send Authorization: Bearer <LEASEHOLD_ADMIN_TOKEN>';
  if (decision.status === 403) return 'the tools that change jobs need the admin token, and the Bearer token sent is not it';
  return decision.message;
}

/** A JSON-RPC error answer with no id (the request was not read). */
function rpcError(message: string): Record<string, unknown> {
  return { jsonrpc: '2.0', error: { code: -32000, message }, id: null };
}

/** `POST /mcp`: leasehold's MCP tools over Streamable HTTP. */
export const mcpRoutes: FastifyPluginAsync<McpRoutesOptions> = async (app, opts) => {
  const { access, nodeHeader } = opts;

  app.addHook('onRequest', async (_req, reply) => {
    void reply.header(nodeHeader.name, nodeHeader.value);
  });
  app.post('/mcp', async (req, reply) => {
    const origin = req.headers.origin;
    if (!originAllowed(origin, opts.allowedOrigins ?? [])) {
      req.log.warn({ origin }, 'MCP request from origin %s refused: not in LEASEHOLD_MCP_ALLOWED_ORIGINS', origin);
      return reply.code(403).send(rpcError(`origin ${JSON.stringify(origin)} may not call these tools: list it in LEASEHOLD_MCP_ALLOWED_ORIGINS`));
    }
    const authorization = req.headers.authorization;
    const read = access.read(authorization);
    const wait = opts.failures?.retryAfter(req.ip) ?? 0;
    if (wait > 0 && (!read.ok || authorization !== undefined)) {
      return reply.code(429).header('retry-after', String(wait)).send(rpcError(`too many failed token attempts from this address: try again in ${wait} s`));
    }
    if (!read.ok) {
      if (read.wrong) opts.failures?.fail(req.ip, '/mcp');
      return reply.code(read.status).header('www-authenticate', 'Bearer').send(rpcError(read.message));
    }
    const admin = access.admin(authorization);
    // A token that is neither the read nor the admin token (reads open) is a failed attempt too.
    if (!admin.ok && admin.wrong && !access.readProtected) opts.failures?.fail(req.ip, '/mcp');
    // The SDK and the tools are loaded with the first request: a node that is never asked pays
    // neither their start-up time nor their memory (about 20 MB with zod).
    let mcp: McpModules;
    try {
      mcp = await loadMcp();
    } catch (err) {
      if (!isLeaseholdError(err)) throw err;
      return reply.code(501).send(rpcError(err.message));
    }
    const { createMcpServer } = mcp.tools;
    const Transport = mcp.transports.StreamableHTTPServerTransport;
    const server = createMcpServer({ api: opts.api, refuseMutation: mutationRefusal(admin, access.adminConfigured), now: opts.now, version: opts.version, ...(opts.executors ? { executors: opts.executors } : {}) });
    const transport = new Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.raw.setHeader(nodeHeader.name, nodeHeader.value);
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (err) {
      req.log.warn({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify(rpcError('internal error')));
    }
  });
  const notAllowed = async (_req: unknown, reply: FastifyReply): Promise<FastifyReply> =>
    reply.code(405).header('allow', 'POST').send(rpcError('this MCP endpoint is stateless: POST JSON-RPC requests to /mcp'));
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);
};
