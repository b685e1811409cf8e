/**
 * The jobs the fault suite runs. Each run appends JSON lines to `$RUN_LOG` (start, work,
 * end, abort) with the job, the tick, this node's id, the fencing token and the time: the
 * record of what really ran, independent of leasehold's own counters.
 *
 * Environment: `RUN_LOG` (required), `CHAOS_JOBS` (comma list of job ids, default all but
 * `many`), `CHAOS_WORK_LEASE` (lease of `work`, default 2s), `CHAOS_WORK_MS` (how long a `work`
 * run goes on, default 30 s), `CHAOS_BLOCK_MS` (how long `blocker` holds the event loop),
 * `CHAOS_THREAD_MS` (how long a run of `threaded` keeps its worker thread busy, default 3 s).
 *
 * Careless code on purpose: each run of `careless` leaves a rejection nobody handles, and
 * `thrower` throws from a timer where nobody catches it once the file `<RUN_LOG>.throw-<node>`
 * appears (the harness makes it; the run that finds it removes it). `many` is the two hundred
 * jobs of `test/fixtures/jobs-many.mjs` (they write no run log).
 * @module
 */
import { appendFileSync, existsSync, rmSync } from 'node:fs';
import { parseDuration, type JobContext, type JobDefinition } from '../src/index.js';
import { throwTrigger } from './runlog.js';

/** What a line of the run log says happened. */
export type RunEvent = 'start' | 'work' | 'end' | 'abort';

/** The ids of the jobs in this module. */
export const CHAOS_JOB_IDS = ['tick', 'work', 'local', 'blocker', 'careless', 'thrower', 'threaded', 'many'] as const;
/** One of {@link CHAOS_JOB_IDS}. */
export type ChaosJobId = (typeof CHAOS_JOB_IDS)[number];

/** Steps of a `work` run, ms: the job checks its signal before each step's work. */
export const WORK_STEP_MS = 100;

const runLog = process.env['RUN_LOG'];
if (runLog === undefined || runLog === '') throw new Error('chaos jobs: RUN_LOG must name the run log file');
const logFile: string = runLog;
const instance = process.env['LEASEHOLD_INSTANCE_ID'] ?? `pid-${process.pid}`;
const workMs = Number(process.env['CHAOS_WORK_MS'] ?? 30_000);
const blockMs = Number(process.env['CHAOS_BLOCK_MS'] ?? 2_500);
const threadMs = Number(process.env['CHAOS_THREAD_MS'] ?? 3_000);

function write(ev: RunEvent, ctx: JobContext, reason?: string): void {
  const line = {
    ev,
    job: ctx.jobId,
    tick: ctx.scheduledAt.getTime(),
    inst: instance,
    token: ctx.fencingToken,
    t: Date.now(),
    ...(reason === undefined ? {} : { reason }),
  };
  appendFileSync(logFile, `${JSON.stringify(line)}\n`);
}

function reasonOf(err: unknown): string {
  if (err !== null && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A handler that logs its start, does `body`, and logs how it ended. */
function logged(body: (ctx: JobContext) => Promise<void> | void): (ctx: JobContext) => Promise<void> {
  return async (ctx) => {
    write('start', ctx);
    try {
      await body(ctx);
      write('end', ctx);
    } catch (err) {
      write('abort', ctx, reasonOf(err));
      throw err;
    }
  };
}

/** Steps of work, each after a check of the signal, as a careful job does them. */
async function steps(ctx: JobContext): Promise<void> {
  const until = Date.now() + workMs;
  while (Date.now() < until) {
    await sleep(WORK_STEP_MS, ctx.signal);
    ctx.signal.throwIfAborted();
    write('work', ctx);
  }
}

function block(): void {
  const until = Date.now() + blockMs;
  while (Date.now() < until) {
    // CPU-bound work that never yields to the event loop
  }
}

/** CPU-bound work on a worker thread that never yields (nor reads its signal): a `work` line per 100 ms step. */
function busySteps(ctx: JobContext): void {
  const until = Date.now() + threadMs;
  let next = Date.now() + WORK_STEP_MS;
  while (Date.now() < until) {
    if (Date.now() >= next) {
      write('work', ctx);
      next += WORK_STEP_MS;
    }
  }
}

const all: Record<ChaosJobId, JobDefinition | readonly JobDefinition[]> = {
  tick: { id: 'tick', scope: 'installation', cron: '* * * * * *', lease: '3s', run: logged(async (ctx) => {
    await sleep(100, ctx.signal);
    // A node frozen in the sleep wakes past its lease: asking the signal tells the run so.
    ctx.signal.throwIfAborted();
  }) },
  work: { id: 'work', scope: 'installation', fixedRate: '1s', lease: parseDuration(process.env['CHAOS_WORK_LEASE'] ?? '2s'), timeout: '5m', run: logged(steps) },
  local: { id: 'local', scope: 'instance', fixedRate: '250ms', run: logged((ctx) => sleep(20, ctx.signal)) },
  blocker: { id: 'blocker', scope: 'installation', fixedRate: '1h', lease: '1s', run: logged(block) },
  careless: { id: 'careless', scope: 'instance', fixedRate: '500ms', run: logged(() => {
    void Promise.reject(new Error('a rejection nobody awaits'));
  }) },
  thrower: { id: 'thrower', scope: 'instance', fixedRate: '250ms', run: logged(() => {
    const trigger = throwTrigger(logFile, instance);
    if (!existsSync(trigger)) return;
    rmSync(trigger, { force: true });
    setTimeout(() => {
      throw new Error('thrown from a timer where nobody catches it');
    }, 10);
  }) },
  threaded: { id: 'threaded', scope: 'instance', fixedDelay: '1h', thread: 'worker', run: logged(busySteps) },
  many: [],
};

const selected = (process.env['CHAOS_JOBS'] ?? CHAOS_JOB_IDS.filter((id) => id !== 'many').join(',')).split(',').map((s) => s.trim()).filter((s) => s !== '');
for (const id of selected) {
  if (!(CHAOS_JOB_IDS as readonly string[]).includes(id)) throw new Error(`chaos jobs: unknown job ${JSON.stringify(id)} in CHAOS_JOBS`);
}
if (selected.includes('many')) {
  // A plain module without types: its jobs are checked by the runner like any other.
  const fixture = '../test/fixtures/jobs-many.mjs';
  all.many = ((await import(fixture)) as { default: readonly JobDefinition[] }).default;
}

export default selected.flatMap((id) => all[id as ChaosJobId]);
