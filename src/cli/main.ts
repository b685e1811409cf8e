/**
 * The `leasehold` command: `next`, `check`, `start`, `status`.
 * @module
 */
import { ErrorCodes, isLeaseholdError, errorMessage } from '../errors.js';
import { runNext } from './next.js';
import { runCheck } from './check.js';
import { runStart } from './start.js';

/** What a sub-command prints and its exit code. */
export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const USAGE = `usage: leasehold <command>
  next "<cron>" [--zone Z] [--from ISO] [-n N]   print the next fire times
  check <jobs-module>                            check job definitions (exit 0 when valid)
  start --jobs <module> [--port N] [...]         run a node (see the README for every flag)
  status [--json]                                print the cluster's job status from Redis
  forget <jobId>                                 remove a job that left the code of every node
`;

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    let result: CommandResult;
    switch (command) {
      case 'next':
        result = runNext(rest);
        break;
      case 'check':
        result = await runCheck(rest);
        break;
      case 'start':
        return await runStart(rest);
      case 'status': {
        const { runStatus } = await import('./status.js');
        result = await runStatus(rest);
        break;
      }
      case 'forget': {
        const { runForget } = await import('./forget.js');
        result = await runForget(rest);
        break;
      }
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        process.stderr.write(`leasehold: unknown command ${JSON.stringify(command)}\n${USAGE}`);
        return 2;
    }
    process.stdout.write(result.stdout);
    process.stderr.write(result.stderr);
    return result.code;
  } catch (err) {
    const msg = errorMessage(err);
    process.stderr.write(`leasehold: ${msg}\n`);
    return isLeaseholdError(err) && (err.code === ErrorCodes.invalidConfig || err.code === ErrorCodes.invalidCron || err.code === ErrorCodes.invalidZone) ? 2 : 1;
  }
}
