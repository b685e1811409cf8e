/**
 * `leasehold check <module>`: runs the registration checks on a jobs module, for CI.
 * @module
 */
import { resolve } from 'node:path';
import { checkJobs } from '../schedule/job-list.js';
import { expandExport } from '../decorators/register.js';
import type { DecoratedTask } from '../decorators/naming.js';
import { checkTaskDefinitions, resolveExecutors } from '../create/command.js';
import { isLeaseholdError } from '../errors.js';
import { loadJobsModule, loadModuleExtras } from './load.js';
import type { CommandResult } from './main.js';
import type { CommandHelp } from './help.js';

/** `leasehold check --help`. */
export const CHECK_HELP: CommandHelp = {
  usage: ['leasehold check <jobs-module>'],
  summary:
    'Loads a jobs module (`.js`, `.mjs` or `.ts`; its default export is an array of jobs and instances with `@Scheduled` and `@Async` methods) and runs on every job and task the checks a node runs when it registers them (a task\'s executor must be configured: in the module\'s `executors` export, or by a catch-all entry `\'*\'`), for CI. Prints one line per problem.',
  options: [],
  notes: ['Decorated methods are named `ClassName.method`; when two exported classes share a name, each takes the path of its module relative to the jobs module as a namespace (`billing/cleanup.ts`: `billing.cleanup.Cleanup.purge`).', 'A decorated class whose name looks minified (one or two characters) gets a warning line, which leaves the exit status alone.', 'Exit status: 0 when every job is valid; 1 when a job is invalid or the module does not load; 2 for bad usage, or a package it needs that is not installed (`missingPeer`: tsx for a `.ts` module where Node does not strip types).'],
};

/** Loads the module and checks every job; exit 0 when all are valid. */
export async function runCheck(args: string[]): Promise<CommandResult> {
  const path = args[0];
  if (!path || args.length > 1) return { code: 2, stdout: '', stderr: 'usage: leasehold check <jobs-module>\n' };
  const { jobs, tasks: methods, errors: decorated, warnings } = expandExport(await loadJobsModule(path), resolve(path));
  const errors = [...decorated.map((e) => e.message), ...checkJobs(jobs), ...(await checkTasks(path, methods))];
  const warned = warnings.map((w) => `${path}: warning: ${w}\n`).join('');
  if (errors.length > 0) return { code: 1, stdout: '', stderr: `${warned}${errors.map((e) => `${path}: ${e}\n`).join('')}` };
  return { code: 0, stdout: `${path}: ${jobs.length} job${jobs.length === 1 ? '' : 's'} ok\n`, stderr: warned };
}

/**
 * The errors of a jobs module's tasks, as a node adding them would meet them: its `executors`
 * export, and each task of its `tasks` export and of its `@Async` methods on an executor it
 * configures.
 */
async function checkTasks(path: string, methods: readonly DecoratedTask[]): Promise<string[]> {
  const extras = await loadModuleExtras(path);
  let executors: ReturnType<typeof resolveExecutors>;
  try {
    executors = resolveExecutors(extras.executors);
  } catch (err) {
    if (!isLeaseholdError(err)) throw err;
    return [err.message];
  }
  const named = (t: DecoratedTask): string => `@Async ${t.registration.className}.${t.method}`;
  return [
    ...checkTaskDefinitions(executors, extras.tasks).map((e) => e.message),
    ...methods.flatMap((t) => checkTaskDefinitions(executors, [t.definition]).map((e) => `${named(t)}: ${e.message}`)),
  ];
}
