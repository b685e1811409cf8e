/**
 * Checking a list of jobs as a runner would: each definition (`normalizeJob`), and that ids
 * are unique; for `leasehold start` and `leasehold check`.
 * @module
 */
import { ErrorCodes, LeaseholdError, leaseholdError } from '../errors.js';
import { describe } from './duration.js';
import { normalizeJob, type NormalizedJob } from './job.js';

/**
 * Checks a list of jobs as a runner would: each definition, and that ids are unique. Hands
 * each error to `onError` (which may throw to stop at the first) and each job that passed to
 * `onJob`; keeps nothing itself (a node checks ten thousand jobs before it adds them).
 */
function checkEach(jobs: unknown, onError: (err: LeaseholdError) => void, onJob?: (job: NormalizedJob) => void): void {
  if (!Array.isArray(jobs)) {
    onError(new LeaseholdError(ErrorCodes.invalidModule, `expected an array of jobs, got ${describe(jobs)}`));
    return;
  }
  const seen = new Set<string>();
  for (const definition of jobs) {
    let job: NormalizedJob;
    try {
      job = normalizeJob(definition);
    } catch (err) {
      // normalizeJob throws only LeaseholdErrors; anything else is a bug to surface.
      if (!(err instanceof LeaseholdError)) throw err;
      onError(err);
      continue;
    }
    if (seen.has(job.id)) {
      onError(leaseholdError(ErrorCodes.duplicateJob, { job: JSON.stringify(job.id) }));
      continue;
    }
    seen.add(job.id);
    onJob?.(job);
  }
}

const throwFirst = (err: LeaseholdError): never => {
  throw err;
};

/**
 * Checks a list of jobs as a runner would: each definition, and that ids are unique.
 * @returns the normalized jobs, or throws the first error.
 */
export function normalizeJobs(jobs: unknown): NormalizedJob[] {
  const passed: NormalizedJob[] = [];
  checkEach(jobs, throwFirst, (job) => passed.push(job));
  return passed;
}

/**
 * Checks a list of jobs as a runner would, as {@link normalizeJobs} does, without keeping the
 * normalized jobs.
 * @throws LeaseholdError the first error.
 */
export function assertJobs(jobs: unknown): void {
  checkEach(jobs, throwFirst);
}

/** Every check error of a list of jobs, so a CI run reports all at once. */
export function checkJobs(jobs: unknown): string[] {
  const errors: string[] = [];
  checkEach(jobs, (err) => errors.push(err.message));
  return errors;
}
