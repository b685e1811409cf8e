/**
 * `leasehold check <module>`: runs the registration checks on a jobs module, for CI.
 * @module
 */
import { checkJobs } from '../schedule/job.js';
import { loadJobsModule } from './load.js';
import type { CommandResult } from './main.js';

/** Loads the module and checks every job; exit 0 when all are valid. */
export async function runCheck(args: string[]): Promise<CommandResult> {
  const path = args[0];
  if (!path || args.length > 1) return { code: 2, stdout: '', stderr: 'usage: leasehold check <jobs-module>\n' };
  const jobs = await loadJobsModule(path);
  const errors = checkJobs(jobs);
  if (errors.length > 0) return { code: 1, stdout: '', stderr: errors.map((e) => `${path}: ${e}\n`).join('') };
  return { code: 0, stdout: `${path}: ${jobs.length} job${jobs.length === 1 ? '' : 's'} ok\n`, stderr: '' };
}
