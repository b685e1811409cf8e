/**
 * S6: leasehold's executors against what users would install instead, with the same
 * concurrency and the same tasks: the loop executor against p-queue (with and without a
 * per-task timeout), p-limit, a plain promise pool and the submission API alone; the worker
 * executor against piscina used directly, with no-op tasks and with 1 ms CPU tasks; the queue
 * executor against BullMQ's Queue and Worker, with Redis commands per task.
 *
 * Each comparison runs its sides in rounds, one after the other in a rotating order, and
 * reports each side's median throughput (tasks per second from the first submission to the
 * last result) and leasehold's ratio to each peer, checked against the targets. The loop and
 * worker sides are set up once and warmed by one round that is not counted, as in a service
 * that has been running; the queue sides are set up afresh each round (half a second to
 * settle) so that Redis's command count of a round is that side's alone.
 * @module
 */
import { startBenchRedis, type BenchRedis } from './redis.js';
import { loopSides, queueSides, workerSides, type Opened, type Side } from './s6-sides.js';

/** S6's kinds of executor. */
export const S6_KINDS = ['loop', 'worker', 'queue'] as const;
/** One of {@link S6_KINDS}. */
export type S6Kind = (typeof S6_KINDS)[number];

/** How S6 runs. */
export interface S6Options {
  /** Tasks per round of the no-op comparisons (`BENCH_S6_TASKS`, default 10,000). */
  readonly tasks: number;
  /** Tasks per round of the 1 ms CPU comparison (`BENCH_S6_CPU_TASKS`, default 2,000). */
  readonly cpuTasks: number;
  /** Rounds per comparison (`BENCH_S6_ROUNDS`, default 5, or 3 with `BENCH_QUICK`). */
  readonly rounds: number;
  /** The kinds run (`BENCH_S6_KINDS`, default all). */
  readonly kinds: readonly S6Kind[];
}

/** One side's figures in one comparison. */
export interface SideFigures {
  /** The median over the rounds. */
  readonly tasksPerSecond: number;
  readonly rounds: readonly number[];
  /** Queue only: Redis commands per task (INFO, scripts' inner calls included), the median over the rounds. */
  readonly redisCommandsPerTask?: number;
}

/** leasehold against one peer, and the target that applies. */
export interface S6Check {
  readonly peer: string;
  /** leasehold's median over the peer's. */
  readonly ratio: number;
  /** The ratio of each round, leasehold's over the peer's of the same round. */
  readonly roundRatios: readonly number[];
  /** The least ratio the target asks for; null for a reference without a target. */
  readonly target: number | null;
  /** Queue: leasehold's commands per task over the peer's, and the most the target allows. */
  readonly commands?: { readonly ratio: number; readonly within: number };
  readonly met: boolean | null;
}

/** One comparison: a kind of executor on one task. */
export interface S6Comparison {
  readonly kind: S6Kind;
  readonly task: string;
  readonly concurrency: number;
  readonly tasks: number;
  readonly sides: Readonly<Record<string, SideFigures>>;
  readonly checks: readonly S6Check[];
}

/** S6's results. */
export interface S6Figures {
  readonly rounds: number;
  readonly comparisons: readonly S6Comparison[];
}

const LOOP_CONCURRENCY = 50;
const WORKER_THREADS = 2;
const QUEUE_CONCURRENCY = 50;

function count(raw: string | undefined, what: string, dflt: number): number {
  if (raw === undefined || raw.trim() === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${what}: ${JSON.stringify(raw)} is not a whole number above 0`);
  return n;
}

/** Reads S6's options from `env`. */
export function readS6Options(env: NodeJS.ProcessEnv): S6Options {
  const quick = env['BENCH_QUICK'] === '1' || env['BENCH_QUICK'] === 'true';
  const raw = env['BENCH_S6_KINDS']?.split(',').map((k) => k.trim()).filter((k) => k !== '') ?? [...S6_KINDS];
  for (const k of raw) if (!(S6_KINDS as readonly string[]).includes(k)) throw new Error(`BENCH_S6_KINDS: unknown ${JSON.stringify(k)}; expected some of ${S6_KINDS.join(',')}`);
  return {
    tasks: count(env['BENCH_S6_TASKS'], 'BENCH_S6_TASKS', 10_000),
    cpuTasks: count(env['BENCH_S6_CPU_TASKS'], 'BENCH_S6_CPU_TASKS', 2_000),
    rounds: count(env['BENCH_S6_ROUNDS'], 'BENCH_S6_ROUNDS', quick ? 3 : 5),
    kinds: S6_KINDS.filter((k) => raw.includes(k)),
  };
}

/** `x` to two decimals. */
export const r2 = (x: number): number => Math.round(x * 100) / 100;
/** `a / b` to two decimals, or two significant digits below 0.1 (a reference far ahead). */
const ratioOf = (a: number, b: number): number => (a / b >= 0.1 ? r2(a / b) : Number((a / b).toPrecision(2)));

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

interface Spec {
  readonly kind: S6Kind;
  readonly task: string;
  readonly concurrency: number;
  readonly tasks: number;
  /** leasehold first, then its peers. */
  readonly sides: readonly Side[];
  /** Set every side up afresh for each round (and count its Redis commands). */
  readonly fresh?: BenchRedis;
}

/** Runs one comparison's rounds. */
async function compare(spec: Spec, rounds: number, log: (line: string) => void): Promise<S6Comparison> {
  log(`S6 ${spec.kind}, ${spec.task}: ${spec.tasks} tasks x ${rounds} rounds, ${spec.sides.map((s) => s.name).join(', ')}`);
  const rates = new Map<string, number[]>(spec.sides.map((s) => [s.name, []]));
  const commands = new Map<string, number[]>(spec.sides.map((s) => [s.name, []]));
  const kept = new Map<string, Opened>();
  const close = async (): Promise<void> => {
    for (const o of kept.values()) await o.close();
    kept.clear();
  };
  try {
    if (!spec.fresh) {
      for (const side of spec.sides) {
        const o = await side.open();
        kept.set(side.name, o);
        await o.run(spec.tasks); // warm: not counted
      }
    }
    for (let round = 0; round < rounds; round++) {
      const order = spec.sides.map((_, i) => spec.sides[(i + round) % spec.sides.length] as Side);
      for (const side of order) {
        const o = kept.get(side.name) ?? (await side.open());
        try {
          const before = spec.fresh ? (await spec.fresh.counters()).commands : 0;
          const t0 = performance.now();
          await o.run(spec.tasks);
          const ms = performance.now() - t0;
          if (spec.fresh) commands.get(side.name)?.push(((await spec.fresh.counters()).commands - before) / spec.tasks);
          rates.get(side.name)?.push(Math.round((spec.tasks / ms) * 1000));
        } finally {
          if (!kept.has(side.name)) await o.close();
        }
      }
    }
  } finally {
    await close();
  }
  const sides: Record<string, SideFigures> = {};
  for (const side of spec.sides) {
    const rs = rates.get(side.name) ?? [];
    const cs = commands.get(side.name) ?? [];
    sides[side.name] = { tasksPerSecond: Math.round(median(rs)), rounds: rs, ...(cs.length > 0 ? { redisCommandsPerTask: r2(median(cs)) } : {}) };
  }
  const [lh, ...peers] = spec.sides;
  const own = sides[lh?.name ?? ''];
  const checks = peers.map((peer): S6Check => {
    const theirs = sides[peer.name];
    const ratio = own && theirs ? ratioOf(own.tasksPerSecond, theirs.tasksPerSecond) : 0;
    const roundRatios = (own?.rounds ?? []).map((x, i) => ratioOf(x, theirs?.rounds[i] ?? Number.NaN));
    const cmds = peer.commandsWithin !== undefined && own?.redisCommandsPerTask !== undefined && theirs?.redisCommandsPerTask ? { ratio: r2(own.redisCommandsPerTask / theirs.redisCommandsPerTask), within: peer.commandsWithin } : undefined;
    const met = peer.target === undefined ? null : ratio >= peer.target && (cmds === undefined || cmds.ratio <= cmds.within);
    return { peer: peer.name, ratio, roundRatios, target: peer.target ?? null, ...(cmds ? { commands: cmds } : {}), met };
  });
  return { kind: spec.kind, task: spec.task, concurrency: spec.concurrency, tasks: spec.tasks, sides, checks };
}

/** Runs S6. */
export async function runS6(opts: S6Options, log: (line: string) => void): Promise<S6Figures> {
  const comparisons: S6Comparison[] = [];
  if (opts.kinds.includes('loop')) {
    comparisons.push(await compare({ kind: 'loop', task: 'no-op (await null; n * n)', concurrency: LOOP_CONCURRENCY, tasks: opts.tasks, sides: loopSides(LOOP_CONCURRENCY) }, opts.rounds, log));
  }
  if (opts.kinds.includes('worker')) {
    comparisons.push(await compare({ kind: 'worker', task: 'no-op (n * n)', concurrency: WORKER_THREADS, tasks: opts.tasks, sides: workerSides(WORKER_THREADS, undefined) }, opts.rounds, log));
    comparisons.push(await compare({ kind: 'worker', task: '1 ms of CPU', concurrency: WORKER_THREADS, tasks: opts.cpuTasks, sides: workerSides(WORKER_THREADS, 1) }, opts.rounds, log));
  }
  if (opts.kinds.includes('queue')) {
    const redis = await startBenchRedis();
    let round = 0;
    try {
      const sides = queueSides(redis.url, QUEUE_CONCURRENCY, () => ++round);
      comparisons.push(await compare({ kind: 'queue', task: 'no-op (n * n)', concurrency: QUEUE_CONCURRENCY, tasks: opts.tasks, sides, fresh: redis }, opts.rounds, log));
    } finally {
      await redis.stop();
    }
  }
  return { rounds: opts.rounds, comparisons };
}

function verdict(c: S6Check): string {
  if (c.met === null) return 'reference';
  const cmds = c.commands ? ` and commands/task <= ${c.commands.within} x` : '';
  return `${c.met ? 'met' : 'NOT MET'} (>= ${c.target} x${cmds})`;
}

/** S6 as a table and the targets' verdicts. */
export function formatS6(s6: S6Figures): string {
  const out = [
    `S6: leasehold's executors against what users install, same concurrency and tasks; median of ${s6.rounds} rounds`,
    '',
    '| kind | task | concurrency | tasks | leasehold tasks/s | against | its tasks/s | ratio | ratio by round | Redis commands per task (leasehold / it) | target |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of s6.comparisons) {
    const own = c.sides['leasehold'];
    for (const check of c.checks) {
      const theirs = c.sides[check.peer];
      const cmds = own?.redisCommandsPerTask !== undefined ? `${own.redisCommandsPerTask} / ${theirs?.redisCommandsPerTask ?? '?'}${check.commands ? ` (${check.commands.ratio} x)` : ''}` : '—';
      out.push(`| ${c.kind} | ${c.task} | ${c.concurrency} | ${c.tasks} | ${own?.tasksPerSecond ?? '?'} | ${check.peer} | ${theirs?.tasksPerSecond ?? '?'} | ${check.ratio} | ${check.roundRatios.join(', ')} | ${cmds} | ${verdict(check)} |`);
    }
  }
  return out.join('\n');
}
