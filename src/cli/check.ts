/**
 * `leasehold check <module>`: runs the registration checks on a jobs module, for CI.
 * @module
 */
import { resolve } from 'node:path';
import { checkJobs } from '../schedule/job.js';
import { expandExport } from '../decorators/register.js';
import { loadJobsModule } from './load.js';
import type { CommandResult } from './main.js';
import type { CommandHelp } from './help.js';

/** `leasehold check --help`. */
export const CHECK_HELP: CommandHelp = {
  usage: ['leasehold check <jobs-module>'],
  summary:
    'Loads a jobs module (`.js`, `.mjs` or `.ts`; its default export is an array of jobs and instances with `@Scheduled` and `@Async` methods) and runs on every job the checks a node runs when it registers them, for CI. Prints one line per problem.',
  options: [],
  notes: ['Decorated methods are named `ClassName.method`; when two exported classes share a name, each takes the path of its module relative to the jobs module as a namespace (`billing/cleanup.ts`: `billing.cleanup.Cleanup.purge`).', 'Exit status: 0 when every job is valid; 1 when a job is invalid or the module does not load; 2 for bad usage.'],
};

/** Loads the module and checks every job; exit 0 when all are valid. */
export async function runCheck(args: string[]): Promise<CommandResult> {
  const path = args[0];
  if (!path || args.length > 1) return { code: 2, stdout: '', stderr: 'usage: leasehold check <jobs-module>\n' };
  const { jobs, errors: decorated } = expandExport(await loadJobsModule(path), resolve(path));
  const errors = [...decorated.map((e) => e.message), ...checkJobs(jobs)];
  if (errors.length > 0) return { code: 1, stdout: '', stderr: errors.map((e) => `${path}: ${e}\n`).join('') };
  return { code: 0, stdout: `${path}: ${jobs.length} job${jobs.length === 1 ? '' : 's'} ok\n`, stderr: '' };
}
