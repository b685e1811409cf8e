/**
 * Pages of the cluster's jobs, for installations too large for one answer: `GET
 * /manage/jobs?limit=&cursor=&state=&q=`, `leasehold status --limit`, MCP's `list_jobs`. A page
 * is cut from the cached status (jobs sorted by id), so it costs Redis nothing; its cursor is
 * the last id it holds, so the next page starts after it even when jobs come and go between
 * the two requests (none is shown twice, none that existed throughout is skipped).
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import { StatusStates, type ClusterStatus, type InstanceStatus, type JobStatus, type StatusProblem, type StatusState } from './model.js';

/** The page size when `limit` is not given. */
export const DEFAULT_PAGE_SIZE = 100;
/** The largest page. */
export const MAX_PAGE_SIZE = 1_000;
/** Above this many jobs the unpaged `GET /manage/jobs` is refused, naming the paged form. */
export const MAX_UNPAGED_JOBS = 5_000;
/** The longest search text. */
const MAX_QUERY_LENGTH = 200;

/** Which jobs, from where, how many. */
export interface JobsQuery {
  /** At most this many jobs (1 to 1,000). */
  readonly limit: number;
  /** The `nextCursor` of the page before; the first page without it. */
  readonly cursor?: string;
  /** Only jobs in this state. */
  readonly state?: StatusState;
  /** Only jobs whose id or description holds this text, ignoring case. */
  readonly q?: string;
}

/** `GET /manage/jobs?limit=...`: one page of the jobs that match, in id order. */
export interface JobsPage {
  /** Redis time of the read the page was cut from, ISO-8601. */
  readonly generatedAt: string;
  /** The jobs of this page. */
  readonly jobs: JobStatus[];
  /** How many jobs match the query, on every page. */
  readonly total: number;
  /** The cursor of the next page; null on the last. */
  readonly nextCursor: string | null;
  /** The live nodes. */
  readonly instances: InstanceStatus[];
  /** What cannot be read, as in the whole list. */
  readonly problems: StatusProblem[];
}

/** The raw query parameters, as a route or a command receives them. */
export interface RawJobsQuery {
  readonly limit?: string | number | undefined;
  readonly cursor?: string | undefined;
  readonly state?: string | undefined;
  readonly q?: string | undefined;
}

function invalid(field: string, problem: string): LeaseholdError {
  return new LeaseholdError(ErrorCodes.invalidQuery, `${field}: ${problem}`);
}

/**
 * Refuses the whole list of an installation of more than {@link MAX_UNPAGED_JOBS} jobs.
 * @throws LeaseholdError `invalidQuery` naming the paged form.
 */
export function checkUnpaged(jobs: number): void {
  if (jobs > MAX_UNPAGED_JOBS) {
    throw new LeaseholdError(ErrorCodes.invalidQuery, `${jobs} jobs are more than one answer holds (${MAX_UNPAGED_JOBS}): ask for pages, GET /manage/jobs?limit=${DEFAULT_PAGE_SIZE} and then &cursor=<nextCursor> of each page`);
  }
}

/** Whether any paging parameter is given (else the whole list is asked for). */
export function asksForPage(raw: RawJobsQuery): boolean {
  return raw.limit !== undefined || raw.cursor !== undefined || raw.state !== undefined || raw.q !== undefined;
}

/**
 * Reads a query's parameters.
 * @throws LeaseholdError `invalidQuery` naming the parameter at fault.
 */
export function parseJobsQuery(raw: RawJobsQuery): JobsQuery {
  let limit = DEFAULT_PAGE_SIZE;
  if (raw.limit !== undefined && raw.limit !== '') {
    const n = typeof raw.limit === 'number' ? raw.limit : /^\d+$/.test(raw.limit) ? Number(raw.limit) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) throw invalid('limit', `${JSON.stringify(raw.limit)} is not a whole number from 1 to ${MAX_PAGE_SIZE}`);
    limit = n;
  }
  const states = Object.values(StatusStates) as string[];
  if (raw.state !== undefined && raw.state !== '' && !states.includes(raw.state)) throw invalid('state', `${JSON.stringify(raw.state)} is not one of ${states.join(', ')}`);
  if (raw.q !== undefined && raw.q.length > MAX_QUERY_LENGTH) throw invalid('q', `at most ${MAX_QUERY_LENGTH} characters`);
  if (raw.cursor !== undefined && raw.cursor !== '' && decodeCursor(raw.cursor) === undefined) throw invalid('cursor', 'not a cursor this API gave (pass nextCursor as it came)');
  return {
    limit,
    ...(raw.cursor ? { cursor: raw.cursor } : {}),
    ...(raw.state ? { state: raw.state as StatusState } : {}),
    ...(raw.q ? { q: raw.q } : {}),
  };
}

/** The cursor after the job `id`: opaque to clients, the id in base64url. */
export function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,700}$/.test(cursor)) return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  return id !== '' && encodeCursor(id) === cursor ? id : undefined;
}

/** The lower-cased search text of each job of a status, made once per status (a snapshot is shared by many requests). */
const searchText = new WeakMap<ClusterStatus, string[]>();

function textsOf(status: ClusterStatus): string[] {
  let texts = searchText.get(status);
  if (!texts) {
    texts = status.jobs.map((j) => `${j.id}\n${j.description ?? ''}`.toLowerCase());
    searchText.set(status, texts);
  }
  return texts;
}

/** The index of the first item whose id (`idOf`) sorts after `id`, in `items` sorted by id. */
export function indexAfter<T>(items: readonly T[], id: string, idOf: (item: T) => string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (idOf(items[mid] as T) <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Cuts the page `query` asks for from `status`. */
export function pageOf(status: ClusterStatus, query: JobsQuery): JobsPage {
  const from = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  let matching: readonly JobStatus[] = status.jobs;
  if (query.state !== undefined || query.q !== undefined) {
    const texts = query.q === undefined ? undefined : textsOf(status);
    const needle = query.q?.toLowerCase();
    matching = status.jobs.filter((j, i) => (query.state === undefined || j.state === query.state) && (needle === undefined || (texts?.[i] ?? '').includes(needle)));
  }
  const start = from === undefined ? 0 : indexAfter(matching, from, (j) => j.id);
  const jobs = matching.slice(start, start + query.limit);
  const last = jobs.at(-1);
  return {
    generatedAt: status.generatedAt,
    jobs,
    total: matching.length,
    nextCursor: last !== undefined && start + jobs.length < matching.length ? encodeCursor(last.id) : null,
    instances: status.instances,
    problems: status.problems,
  };
}
