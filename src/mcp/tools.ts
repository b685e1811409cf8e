/**
 * leasehold's MCP tools, for a coding agent: the jobs and their status, one job with its runs,
 * lease and instances, run / pause / resume / cancel, the executors of background tasks
 * (what `GET /manage/executors` lists), the next fires of a cron, and (over
 * stdio) the checks of a jobs module. Built on the status API (`status/api.ts`), so the tools
 * say what `GET /manage/jobs` says and do what its admin routes do.
 * @module
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { errorMessage, isLeaseholdError } from '../errors.js';
import { parseCron } from '../cron/index.js';
import { formatInZone, resolveZone } from '../cron/zone.js';
import type { ActionResult, ExecutorsSource, ManageApi } from '../status/api.js';
import { StatusStates, type JobStatus } from '../status/model.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, parseJobsQuery, type JobsPage } from '../status/page.js';
import { JOB_ID_PATTERN } from '../schedule/job.js';

/** The tools that change something: refused without an admin token and under read-only. */
export const MUTATING_TOOLS = ['run_job', 'pause_job', 'resume_job', 'cancel_run'] as const;

/** What the check of a jobs module found. */
export interface CheckReport {
  readonly ok: boolean;
  /** One line per problem, or the count of valid jobs. */
  readonly lines: readonly string[];
}

/** Options of {@link createMcpServer}. */
export interface McpToolsOptions {
  readonly api: ManageApi;
  /** Why this caller may not use the mutating tools; undefined when it may. */
  readonly refuseMutation: string | undefined;
  /** Checks a jobs module (the `check_jobs` tool, offered only when given). */
  readonly checkJobs?: (path: string) => Promise<CheckReport>;
  /** The cluster's executors (the `list_executors` tool); without it the list is empty. */
  readonly executors?: ExecutorsSource;
  /** The present moment, epoch ms (the default start of `preview_schedule`). */
  readonly now: () => number;
  /** leasehold's version, as the server names itself. */
  readonly version: string;
}

/** The most fire times `preview_schedule` gives. */
const MAX_PREVIEW = 100;

/** What the rules of a zone with daylight saving time do to a cron, for `preview_schedule`. */
const DST_RULES =
  'In a zone with daylight saving time a local time the clocks skip does not exist and does not fire that day (0 30 2 * * * in America/New_York skips the spring-forward night); a local time the clocks pass twice fires once, at the first of the two.';

const jobId = z.string().regex(JOB_ID_PATTERN, 'a job id is 1 to 128 letters, digits, ".", "_", "-" or ":"').describe('The job id, as list_jobs shows it (ClassName.method for a decorated method).');

function json(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] };
}

function refused(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

function action(r: ActionResult): CallToolResult {
  return r.statusCode >= 400 ? refused(String(r.body['message'] ?? JSON.stringify(r.body))) : json(r.body);
}

/** A job as `list_jobs` shows it: enough to pick one, without its instances and settings. */
function compact(j: JobStatus): Record<string, unknown> {
  const s = j.schedule;
  return {
    id: j.id,
    scope: j.scope,
    state: j.state,
    schedule: s.kind === 'cron' ? `cron ${s.expression ?? ''}${s.zone ? ` (${s.zone})` : ''}` : s.kind ? `${s.kind} ${s.intervalMs ?? '?'}ms` : null,
    runs: j.runs,
    succeeded: j.succeeded,
    failed: j.failed,
    timedOut: j.timedOut,
    ...(j.lost > 0 ? { lost: j.lost } : {}),
    lastOutcome: j.lastOutcome,
    lastStartedAt: j.lastStartedAt,
    nextDueAt: j.nextDueAt,
    ...(j.lastError && j.lastOutcome !== 'succeeded' ? { lastError: j.lastError.split('\n')[0] } : {}),
    ...(j.degradedReasons.length > 0 ? { degradedReasons: j.degradedReasons } : {}),
  };
}

/** A page as `list_jobs` answers it: compact jobs, and when there is more, the call that reads it. */
function listed(page: JobsPage): Record<string, unknown> {
  const next = page.nextCursor;
  return {
    total: page.total,
    jobs: page.jobs.map(compact),
    nextCursor: next,
    ...(next !== null ? { more: `${page.jobs.length} of ${page.total} jobs shown: call list_jobs with cursor "${next}" (and the same state and q) for the next page, or narrow with state or q` } : {}),
  };
}

/** Runs a tool's body; a thrown error becomes an error result naming what failed. */
async function answer(f: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await f();
  } catch (err) {
    return refused(isLeaseholdError(err) ? err.message : `failed: ${errorMessage(err)}`);
  }
}

/** An MCP server with leasehold's tools, for one transport (one stdio process, or one HTTP request). */
export function createMcpServer(opts: McpToolsOptions): McpServer {
  const { api } = opts;
  const server = new McpServer({ name: 'leasehold', version: opts.version });
  const mutating = (what: string, f: () => Promise<ActionResult>): Promise<CallToolResult> =>
    answer(async () => (opts.refuseMutation !== undefined ? refused(`${what} refused: ${opts.refuseMutation}`) : action(await f())));

  server.registerTool(
    'list_jobs',
    {
      description: `The cluster's jobs, in id order, a page at a time (${DEFAULT_PAGE_SIZE} unless limit says otherwise), each with its scope, state (ok, degraded, invalidSchedule, paused, orphaned), schedule, counters, last outcome and next due time: the cluster's status, read from Redis. The answer carries total (how many jobs match) and nextCursor (pass it as cursor for the next page; null on the last). Narrow a large list with state and q rather than reading every page.`,
      inputSchema: {
        limit: z.number().int().min(1).max(MAX_PAGE_SIZE).optional().describe(`At most this many jobs, 1 to ${MAX_PAGE_SIZE}. Default ${DEFAULT_PAGE_SIZE}.`),
        cursor: z.string().max(1024).optional().describe('The nextCursor of the page before, as it came; without it, the first page.'),
        state: z.enum(Object.values(StatusStates) as [string, ...string[]]).optional().describe('Only jobs in this state: ok, degraded, invalidSchedule, paused or orphaned.'),
        q: z.string().max(200).optional().describe('Only jobs whose id or description holds this text, ignoring case.'),
      },
      annotations: { readOnlyHint: true },
    },
    ({ limit, cursor, state, q }) => answer(async () => json(listed(await api.jobsPage(parseJobsQuery({ limit, cursor, state, q }))))),
  );
  server.registerTool(
    'get_job',
    {
      description: 'One job in full: its status and counters, recent runs (outcome, node, duration, error), the lease (who holds it, for how long) and the instances that register it.',
      inputSchema: { id: jobId },
      annotations: { readOnlyHint: true },
    },
    ({ id }) =>
      answer(async () => {
        const job = await api.job(id);
        return job ? json(job) : refused(`unknown job ${JSON.stringify(id)}: list_jobs shows the ids`);
      }),
  );
  server.registerTool(
    'run_job',
    {
      description: 'Starts a job now, outside its schedule: an installation job once cluster-wide (unless a run of it holds the lease), an instance job on every live node that has it. Needs the admin token.',
      inputSchema: { id: jobId },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    ({ id }) => mutating('run_job', () => api.run(id)),
  );
  server.registerTool(
    'pause_job',
    {
      description: 'Pauses a job cluster-wide (its ticks are skipped and counted as paused) until resume_job. Needs the admin token.',
      inputSchema: { id: jobId },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    ({ id }) => mutating('pause_job', () => api.pause(id)),
  );
  server.registerTool(
    'resume_job',
    {
      description: 'Resumes a paused job cluster-wide. Needs the admin token.',
      inputSchema: { id: jobId },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    ({ id }) => mutating('resume_job', () => api.resume(id)),
  );
  server.registerTool(
    'cancel_run',
    {
      description: "Aborts the job's run in progress wherever it runs (its signal aborts with reason cancelled; the run is recorded cancelled). Needs the admin token.",
      inputSchema: { id: jobId },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    ({ id }) => mutating('cancel_run', () => api.cancel(id)),
  );
  server.registerTool(
    'list_executors',
    {
      description:
        "The executors of background tasks across the cluster, as GET /manage/executors lists them: a row per node for loop and worker executors (that node's tasks running and waiting), and one row per queue executor with its queue's counts (active, queued, succeeded, failed), each with its kind, concurrency and the tasks timed out, cancelled and interrupted.",
      annotations: { readOnlyHint: true },
    },
    () => answer(async () => json({ executors: opts.executors ? await opts.executors() : [] })),
  );
  server.registerTool(
    'preview_schedule',
    {
      description: `The next fire times of a cron expression (Spring's six fields, seconds first: sec min hour day-of-month month day-of-week) read in a zone, as leasehold fires them. ${DST_RULES}`,
      inputSchema: {
        cron: z.string().min(1).describe('Six fields, seconds first, e.g. "0 30 2 * * *".'),
        zone: z.string().optional().describe('An IANA zone id (Europe/Berlin), a fixed offset (+02:00) or UTC. Default UTC.'),
        count: z.number().int().min(1).max(MAX_PREVIEW).optional().describe(`How many fire times, 1 to ${MAX_PREVIEW}. Default 5.`),
        from: z.string().datetime({ offset: true }).optional().describe('Fire times after this ISO-8601 instant (with Z or an offset). Default now.'),
      },
      annotations: { readOnlyHint: true },
    },
    ({ cron, zone, count, from }) =>
      answer(async () => {
        const resolved = resolveZone(zone ?? 'UTC');
        const schedule = parseCron(cron, { zone: resolved.id });
        const fires: string[] = [];
        let last = new Date(from === undefined ? opts.now() : Date.parse(from));
        for (let at = schedule.next(last); at !== null && fires.length < (count ?? 5); at = schedule.next(last)) {
          fires.push(formatInZone(at, resolved));
          last = at;
        }
        return json({ cron, zone: resolved.id, fires, ...(fires.length < (count ?? 5) ? { note: 'the expression fires no further time' } : {}), dstRules: DST_RULES });
      }),
  );
  const check = opts.checkJobs;
  if (check) {
    server.registerTool(
      'check_jobs',
      {
        description: 'Loads a jobs module (.ts, .mjs or .js; its default export an array of jobs and instances with @Scheduled methods) and runs on every job the checks a node runs when it registers them: one line per problem, naming the job (or Class.method) and the field.',
        inputSchema: { path: z.string().min(1).describe('The path of the jobs module, relative to the working directory of the leasehold mcp process.') },
        annotations: { readOnlyHint: true },
      },
      ({ path }) =>
        answer(async () => {
          const report = await check(path);
          return { content: [{ type: 'text', text: report.lines.join('\n') }], ...(report.ok ? {} : { isError: true }) };
        }),
    );
  }
  return server;
}
