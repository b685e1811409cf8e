// The parts of the docs that are generated from the code, each between `<!-- name:start -->`
// and `<!-- name:end -->` in its page: the configuration table (src/cli/config.ts), the Redis
// key table (src/redis/keys.ts), the error table (src/errors.ts), each command's `--help` and
// the MCP tools as `tools/list` gives them. test/docs-tables.test.ts checks that the pages hold
// what this renders.
//
//   npx tsx scripts/docs-tables.ts     rewrites the pages (the CLI and MCP parts need dist/:
//                                      npm run build first)
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { renderConfigTable } from '../src/cli/config.js';
import { startPrivateRedis } from '../src/cli/private-redis.js';
import { renderKeyTable } from '../src/redis/keys.js';
import { renderErrorTable } from '../src/errors.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = `${root}bin/leasehold.js`;

/** A generated part: the page it lives in, its marker name, and how to render it. */
export interface GeneratedPart {
  readonly page: string;
  readonly name: string;
  render(): Promise<string>;
}

/**
 * Links written for the README's sections, in texts that come from the source, as the docs
 * pages name them (the source's texts are shared with the CLI's help).
 */
const LINKS: ReadonlyArray<readonly [string, string]> = [['(#configuration)', '(./configuration.md)']];

function relink(text: string): string {
  return LINKS.reduce((t, [from, to]) => t.split(from).join(to), text);
}

/** The commands the CLI reference documents, in its order. */
export const COMMANDS = ['start', 'check', 'next', 'status', 'forget', 'mcp'] as const;

function help(args: string[]): string {
  return execFileSync(process.execPath, [bin, ...args, '--help'], { cwd: root, encoding: 'utf8' }).trimEnd();
}

function renderCliHelp(): string {
  const parts = ['```text', '$ npx leasehold --help', help([]), '```'];
  for (const command of COMMANDS) {
    parts.push('', `### \`leasehold ${command}\``, '', '```text', `$ npx leasehold ${command} --help`, help([command]), '```');
  }
  return parts.join('\n');
}

interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: { properties?: Record<string, object> | undefined; required?: string[] | undefined };
  annotations?: { readOnlyHint?: boolean | undefined } | undefined;
}

/** One argument's type as the JSON schema says it, in words. */
function typeOf(schema: Record<string, unknown>): string {
  const type = String(schema['type'] ?? 'any');
  const bounds = [schema['minimum'] !== undefined ? `≥ ${String(schema['minimum'])}` : '', schema['maximum'] !== undefined ? `≤ ${String(schema['maximum'])}` : ''].filter(Boolean);
  return bounds.length > 0 ? `${type} (${bounds.join(', ')})` : type;
}

function renderTools(tools: ListedTool[]): string {
  const out: string[] = [];
  for (const tool of tools) {
    out.push(`### \`${tool.name}\``, '');
    out.push(`${tool.description ?? ''}${tool.annotations?.readOnlyHint === false ? ' **Changes jobs.**' : ''}`, '');
    const props = Object.entries(tool.inputSchema.properties ?? {});
    if (props.length === 0) {
      out.push('No arguments.', '');
      continue;
    }
    out.push('| argument | type | required | meaning |', '|---|---|---|---|');
    for (const [name, schema] of props) {
      const s = schema as Record<string, unknown>;
      const required = tool.inputSchema.required?.includes(name) ? 'yes' : 'no';
      out.push(`| \`${name}\` | ${typeOf(s)} | ${required} | ${String(s['description'] ?? '').replace(/\|/g, '\\|')} |`);
    }
    out.push('');
  }
  return out.join('\n').trimEnd();
}

/** The MCP tools as `leasehold mcp` lists them over stdio (which has every tool), against a private Redis. */
async function renderMcpTools(): Promise<string> {
  const redis = await startPrivateRedis();
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp'], env: { PATH: process.env['PATH'] ?? '', REDIS_URL: redis.url, LOG_LEVEL: 'warn' }, stderr: 'inherit' });
  const client = new Client({ name: 'docs-tables', version: '1.0.0' });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    return renderTools(tools as ListedTool[]);
  } finally {
    await client.close();
    await redis.stop();
  }
}

export const PARTS: readonly GeneratedPart[] = [
  { page: 'docs/reference/configuration.md', name: 'config-table', render: async () => relink(renderConfigTable()) },
  { page: 'docs/reference/redis-keys.md', name: 'key-table', render: async () => relink(renderKeyTable()) },
  { page: 'docs/reference/errors.md', name: 'error-table', render: async () => relink(renderErrorTable()) },
  { page: 'docs/reference/cli.md', name: 'cli-help', render: async () => renderCliHelp() },
  { page: 'docs/reference/mcp.md', name: 'mcp-tools', render: renderMcpTools },
];

const marked = (name: string): RegExp => new RegExp(`(<!-- ${name}:start -->\\n)([\\s\\S]*?)\\n?(<!-- ${name}:end -->)`);

/** What a page holds between the markers of `name`; undefined when it has no such markers. */
export function section(text: string, name: string): string | undefined {
  return marked(name).exec(text)?.[2];
}

async function main(): Promise<void> {
  for (const part of PARTS) {
    const path = `${root}${part.page}`;
    const text = readFileSync(path, 'utf8');
    if (section(text, part.name) === undefined) throw new Error(`${part.page} has no <!-- ${part.name}:start --> ... <!-- ${part.name}:end --> markers`);
    const body = await part.render();
    writeFileSync(path, text.replace(marked(part.name), (_m, start: string, _old: string, end: string) => `${start}${body}\n${end}`));
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
