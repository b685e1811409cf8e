/**
 * Loads the MCP tools and the SDK's transports on first use: the SDK (with zod) is an optional
 * peer dependency, so a node that serves no MCP request, or a project without the SDK, pays
 * nothing for it.
 * @module
 */
import { importPeer } from '../peer.js';

/** What `/mcp` and `leasehold mcp` use. */
export interface McpModules {
  readonly tools: typeof import('./tools.js');
  readonly transports: {
    readonly StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
    readonly StdioServerTransport: typeof import('@modelcontextprotocol/sdk/server/stdio.js').StdioServerTransport;
  };
}

let loading: Promise<McpModules> | undefined;

/**
 * The tools and the transports, loaded once.
 * @throws LeaseholdError `missingPeer` when @modelcontextprotocol/sdk (or zod, which it brings) is not installed.
 */
export function loadMcp(): Promise<McpModules> {
  loading ??= importPeer('@modelcontextprotocol/sdk', 'the MCP tools', async () => {
    const [tools, http, stdio] = await Promise.all([import('./tools.js'), import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('@modelcontextprotocol/sdk/server/stdio.js')]);
    return { tools, transports: { StreamableHTTPServerTransport: http.StreamableHTTPServerTransport, StdioServerTransport: stdio.StdioServerTransport } };
  });
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}
