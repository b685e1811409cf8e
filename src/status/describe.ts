/**
 * A job's description as stored in its stats hash (`scope`, `scheduleKind`, `schedule`,
 * `zone`, `intervalMs`, `description`), so any node and the CLI can show every job
 * without its module.
 * @module
 */
import type { JobView } from '../runner/runner.js';
import { formatDuration, readDuration } from '../schedule/duration.js';

function text(value: unknown): string {
  if (typeof value === 'number') return formatDuration(value);
  return String(value);
}

/** The description fields of a job: its effective schedule, or its declared one when that is invalid. */
export function describeJob(view: JobView): Record<string, string> {
  const out: Record<string, string> = { scope: view.job.scope, description: view.job.description ?? '' };
  const t = view.schedule?.trigger;
  if (t) {
    out['scheduleKind'] = t.kind;
    out['schedule'] = t.expression;
    out['zone'] = t.zone ?? '';
    out['intervalMs'] = String(t.intervalMs);
    return out;
  }
  const declared = view.declared;
  out['scheduleKind'] = declared.kind;
  out['schedule'] = text(declared.value);
  out['zone'] = declared.kind === 'cron' ? (declared.zone ?? 'UTC') : '';
  out['intervalMs'] = '';
  if (declared.kind !== 'cron') {
    try {
      out['intervalMs'] = String(readDuration(declared.value, 'schedule'));
    } catch {
      // An invalid value: the job is invalidSchedule and its cause is stored beside this.
      out['intervalMs'] = '';
    }
  }
  return out;
}
