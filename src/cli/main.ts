/**
 * The `leasehold` command: `next`, `check`, `start`, `status`, `forget`.
 * @module
 */
import { readFileSync } from 'node:fs';
import { ErrorCodes, isLeaseholdError, errorMessage } from '../errors.js';
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
      synopsis: 'status [--json]',
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

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
      const topic = command === 'help' ? COMMANDS.get(rest[0] ?? '') : undefined;
      process.stdout.write(topic ? renderHelp(await topic.help()) : usage());
      return command === undefined ? 2 : 0;
    }
    if (command === '-v' || command === '--version') {
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    }
    const cmd = COMMANDS.get(command);
    if (cmd === undefined) {
      process.stderr.write(`leasehold: unknown command ${JSON.stringify(command)}\n${usage()}`);
      return 2;
    }
    if (asksForHelp(rest)) {
      process.stdout.write(renderHelp(await cmd.help()));
      return 0;
    }
    const result = await cmd.run(rest);
    if (typeof result === 'number') return result;
    process.stdout.write(result.stdout);
    process.stderr.write(result.stderr);
    return result.code;
  } catch (err) {
    const msg = errorMessage(err);
    process.stderr.write(`leasehold: ${msg}\n`);
    return isLeaseholdError(err) && (err.code === ErrorCodes.invalidConfig || err.code === ErrorCodes.invalidCron || err.code === ErrorCodes.invalidZone) ? 2 : 1;
  }
}
