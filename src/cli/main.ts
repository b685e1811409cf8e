/**
 * The `leasehold` command: `next`, `check`, `start`, `status`, `forget`, `mcp`.
 * @module
 */
import { readFileSync } from 'node:fs';
import { errorMessage, exitStatus } from '../errors.js';
import { NEXT_HELP, runNext } from './next.js';
import { CHECK_HELP, runCheck } from './check.js';
import { runStart, startHelp } from './start.js';
import { renderHelp, type CommandHelp } from './help.js';

/** What a sub-command prints and its exit code. */
export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A sub-command: its line in the top-level help, its own help, and how it runs. */
interface Command {
  readonly synopsis: string;
  readonly summary: string;
  help(): Promise<CommandHelp>;
  /** A one-shot command resolves to what it prints; `start` prints as it goes and resolves to its exit code. */
  run(args: string[]): Promise<CommandResult | number>;
}

// status and forget load the Redis client, so they are imported when used.
const COMMANDS = new Map<string, Command>([
  ['next', { synopsis: 'next "<cron>" [--zone Z] [--from ISO] [-n N]', summary: 'print the next fire times', help: async () => NEXT_HELP, run: async (args) => runNext(args) }],
  ['check', { synopsis: 'check <jobs-module>', summary: 'check job definitions (exit 0 when valid)', help: async () => CHECK_HELP, run: runCheck }],
  ['start', { synopsis: 'start --jobs <module> [--port N] [...]', summary: 'run a node', help: async () => startHelp(), run: runStart }],
  [
    'status',
    {
      synopsis: 'status [--json] [--q T] [--limit N]',
      summary: "print the cluster's job status from Redis",
      help: async () => (await import('./status.js')).statusHelp(),
      run: async (args) => (await import('./status.js')).runStatus(args),
    },
  ],
  [
    'forget',
    {
      synopsis: 'forget <jobId>',
      summary: 'remove a job that left the code of every node',
      help: async () => (await import('./forget.js')).forgetHelp(),
      run: async (args) => (await import('./forget.js')).runForget(args),
    },
  ],
  [
    'mcp',
    {
      synopsis: 'mcp [--read-only]',
      summary: 'serve the MCP tools over stdio for a coding agent',
      help: async () => (await import('./mcp.js')).mcpHelp(),
      run: async (args) => (await import('./mcp.js')).runMcp(args),
    },
  ],
]);

function usage(): string {
  const width = Math.max(...[...COMMANDS.values()].map((c) => c.synopsis.length)) + 3;
  return [
    'usage: leasehold <command> [options]',
    '',
    'Commands:',
    ...[...COMMANDS.values()].map((c) => `  ${c.synopsis.padEnd(width)}${c.summary}`),
    '',
    'Options:',
    `  ${'-h, --help'.padEnd(width)}print this help`,
    `  ${'-v, --version'.padEnd(width)}print the version`,
    '',
    "`leasehold <command> --help` prints a command's usage, its flags and the environment variables it reads.",
    '',
  ].join('\n');
}

/** The installed package's version, from its package.json. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/** `--help` or `-h` among a command's arguments (before a `--` that ends the options). */
function asksForHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** Write errors that mean the reader went away (`leasehold next ... | head -1`). */
const READER_GONE = new Set(['EPIPE', 'ERR_STREAM_DESTROYED']);

/**
 * Writes `text` and resolves once the stream has handed it to the system (a pipe takes it in
 * parts as its reader reads), so that exiting after it cannot cut the output. When the reader
 * has gone away there is nothing more to print, as with any Unix tool; another write error
 * rejects.
 */
export function writeOut(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (text === '') {
      resolve();
      return;
    }
    const failed = (err: NodeJS.ErrnoException): void => {
      if (err.code !== undefined && READER_GONE.has(err.code)) resolve();
      else reject(err);
    };
    // The stream emits a failed write as an `error` event too, after the callback.
    stream.once('error', failed);
    stream.write(text, (err) => {
      if (err) {
        failed(err);
        return;
      }
      stream.off('error', failed);
      resolve();
    });
  });
}

/**
 * Runs the CLI with `argv` (without node and the script); resolves to the exit code once what
 * it printed is written, so the caller may exit at once.
 */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
      const topic = command === 'help' ? COMMANDS.get(rest[0] ?? '') : undefined;
      await writeOut(process.stdout, topic ? renderHelp(await topic.help()) : usage());
      return command === undefined ? 2 : 0;
    }
    if (command === '-v' || command === '--version') {
      await writeOut(process.stdout, `${packageVersion()}\n`);
      return 0;
    }
    const cmd = COMMANDS.get(command);
    if (cmd === undefined) {
      await writeOut(process.stderr, `leasehold: unknown command ${JSON.stringify(command)}\n${usage()}`);
      return 2;
    }
    if (asksForHelp(rest)) {
      await writeOut(process.stdout, renderHelp(await cmd.help()));
      return 0;
    }
    const result = await cmd.run(rest);
    if (typeof result === 'number') return result;
    await Promise.all([writeOut(process.stdout, result.stdout), writeOut(process.stderr, result.stderr)]);
    return result.code;
  } catch (err) {
    const msg = errorMessage(err);
    await writeOut(process.stderr, `leasehold: ${msg}\n`);
    return exitStatus(err);
  }
}
