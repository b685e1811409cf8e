/**
 * The event stream of a large installation: above {@link PAGED_ABOVE} jobs `GET
 * /manage/events` sends no job at all (a hundred thousand jobs would be tens of megabytes per
 * client, and again at each change), only how many jobs there are by state, the instances and
 * the executors; the status page then reads the jobs it shows a page at a time from `GET
 * /manage/jobs?limit=` and reads those pages again while they are on screen.
 * @module
 */
import type { ClusterStatus, InstanceStatus } from '../status/model.js';

/** Above this many jobs the stream carries counts instead of jobs (the page reads pages). */
export const PAGED_ABOVE = 2_000;

/** The jobs of a large installation as the stream sends them: how many, and how many per state. */
export interface PagedSummary {
  readonly total: number;
  /** Jobs per state, for the states that have any. */
  readonly states: Readonly<Record<string, number>>;
}

/** The summary of a status. */
export function summarize(status: ClusterStatus): PagedSummary {
  const states: Record<string, number> = {};
  for (const j of status.jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  return { total: status.jobs.length, states };
}

/** What changed in a large installation's summary and instances between two reads. */
export class PagedDiff {
  private summaryText = '';
  private instancesText = '';

  /** The summary and the instances of `status`, each when it changed since the last call. */
  next(status: ClusterStatus): { summary: PagedSummary | undefined; instances: InstanceStatus[] | undefined } {
    const summary = summarize(status);
    const summaryText = JSON.stringify(summary);
    const instancesText = JSON.stringify(status.instances);
    const out = { summary: summaryText === this.summaryText ? undefined : summary, instances: instancesText === this.instancesText ? undefined : status.instances };
    this.summaryText = summaryText;
    this.instancesText = instancesText;
    return out;
  }

  /** Forgets the last read. */
  reset(): void {
    this.summaryText = '';
    this.instancesText = '';
  }
}
