/**
 * The MCP tools over Streamable HTTP at `POST /mcp`, as a fastify plugin mounted beside the
 * status routes on every node. Stateless: each request gets its own server and transport
 * (the SDK's stateless mode), answered as JSON. Reads follow the read token as `GET /manage/*`
 * does; the tools that change jobs need the admin token as `Authorization: Bearer`.
 * @module
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { bearerChecker, readAccess, type AuthDecision } from '../http/auth.js';
import { NODE_HEADER, type ExecutorsSource } from '../http/plugin.js';
import type { ManageApi } from '../status/api.js';

/**
 * The MCP SDK and the tools, loaded with the first request: a node that is never asked pays
 * neither their start-up time nor their memory (about 20 MB with zod).
 */
let sdk: Promise<{ createMcpServer: typeof import('./tools.js').createMcpServer; Transport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport }> | undefined;
const loadSdk = (): NonNullable<typeof sdk> =>
  (sdk ??= Promise.all([import('./tools.js'), import('@modelcontextprotocol/sdk/server/streamableHttp.js')]).then(([tools, http]) => ({ createMcpServer: tools.createMcpServer, Transport: http.StreamableHTTPServerTransport })));

/** Options of {@link mcpRoutes}. */
export interface McpRoutesOptions {
  readonly api: ManageApi;
  /** This node's id, sent in the `x-leasehold-node` header as on every route. */
  readonly instanceId: string;
  readonly adminToken?: string | undefined;
  readonly readToken?: string | undefined;
  readonly now: () => number;
  readonly version: string;
  /** The cluster's executors, for `list_executors`. */
  readonly executors?: ExecutorsSource | undefined;
}

/** Why a caller may not change jobs, from the admin token's check; undefined when it may. */
export function mutationRefusal(decision: AuthDecision, adminConfigured: boolean): string | undefined {
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
  const adminCheck = bearerChecker(opts.adminToken);
  const access = readAccess(opts.readToken, opts.adminToken);
  const adminConfigured = opts.adminToken !== undefined && opts.adminToken !== '';

  app.addHook('onRequest', async (_req, reply) => {
    void reply.header(NODE_HEADER, opts.instanceId);
  });
  app.post('/mcp', async (req, reply) => {
    const authorization = req.headers.authorization;
    const read = access.check(authorization, undefined);
    if (!read.ok) {
      return reply.code(read.status).header('www-authenticate', 'Bearer').send(rpcError(read.message));
    }
    const { createMcpServer, Transport } = await loadSdk();
    const server = createMcpServer({ api: opts.api, refuseMutation: mutationRefusal(adminCheck(authorization), adminConfigured), now: opts.now, version: opts.version, ...(opts.executors ? { executors: opts.executors } : {}) });
    const transport = new Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.raw.setHeader(NODE_HEADER, opts.instanceId);
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
