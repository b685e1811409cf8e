/**
 * Compiles a Nest fixture as a Nest project is compiled (tsc with experimentalDecorators and
 * emitDecoratorMetadata: esbuild, which tsx uses, emits no decorator metadata, which Nest's
 * injection by type needs) into a temporary directory whose node_modules resolve `leasehold`
 * to this package and the fixture's other imports to this repository's packages. And the
 * scenarios test/nestjs.test.ts and test/nestjs-migrated.test.ts run on Nest 12, which
 * test/nestjs-v11.test.ts runs on Nest 11 with the same fixtures.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createRunner } from '../../src/index.js';
import { DEFAULT_PREFIX, keys } from '../../src/redis/keys.js';
import { ROOT, spawnNode, type NodeProc } from './node.js';
import type { TestRedis } from './redis.js';
import { readRuns } from './runs.js';

const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const LINKED = ['@nestjs', '@types', 'reflect-metadata', 'rxjs', 'cron', 'luxon', 'express', 'fastify'];

/**
 * Compiles `.ts` files of a fixture directory (each passed through `rewrite` first, copied into
 * the temporary directory so that their imports resolve there); returns the directory of the
 * `.js` files.
 */
export function compileNestFixture(fixtureDir: string, files: string[], rewrite: (text: string) => string = (t) => t): string {
  const dir = mkdtempSync(join(tmpdir(), `leasehold-${basename(fixtureDir)}-`));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'leasehold'), 'dir');
  for (const p of LINKED) symlinkSync(join(ROOT, 'node_modules', p), join(dir, 'node_modules', p), 'dir');
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  for (const f of files) writeFileSync(join(dir, f), rewrite(readFileSync(join(fixtureDir, f), 'utf8')));
  compileNest(dir, files, fixtureDir);
  return dir;
}

/**
 * Compiles `files` of `dir` in place with tsc, with the options a Nest project compiles with
 * (strict, experimentalDecorators, emitDecoratorMetadata, module nodenext: ES modules or
 * CommonJS as the directory's package.json says). `checkLibraries` checks the declarations of
 * the packages too (no skipLibCheck). A failure names `what`.
 */
export function compileNest(dir: string, files: string[], what: string, checkLibraries = false): void {
  const flags = ['--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', ...(checkLibraries ? [] : ['--skipLibCheck']), '--types', 'node', '--experimentalDecorators', '--emitDecoratorMetadata', '--outDir', dir, '--rootDir', dir];
  try {
    execFileSync(process.execPath, [TSC, ...flags, ...files.map((f) => join(dir, f))], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    assert.fail(`tsc failed on ${what}:\n${(err as { stdout?: string }).stdout ?? String(err)}`);
  }
}

/** test/fixtures/nestjs-migrated: a Nest application written for @nestjs/schedule. */
export const MIGRATED_FIXTURE = join(ROOT, 'test', 'fixtures', 'nestjs-migrated');

/** The migration: the import lines, and nothing else, name leasehold/nestjs. */
export const migrateImports = (text: string): string => text.replace(/^(import .*) from '(?:@nestjs\/schedule|cron)';$/gm, "$1 from 'leasehold/nestjs';");

/** One run of the compiled migrated fixture: the registry it printed and how often each job ran. */
export interface MigratedRun {
  readonly report: Record<string, unknown>;
  readonly runs: Map<string, number>;
}

/** Runs the migrated fixture compiled in `dir` (its tasks.js) until it ends by itself, with exit code 0. */
export async function runMigrated(dir: string, env: Record<string, string>): Promise<MigratedRun> {
  const runLog = join(mkdtempSync(join(tmpdir(), 'leasehold-migrated-')), 'runs.log');
  const p = spawnNode([join(dir, 'tasks.js')], { RUN_LOG: runLog, LOG_LEVEL: 'warn', ...env }, dir);
  const report = await p.waitFor((l) => 'crons' in l, 60_000);
  const exit = await p.exited;
  assert.equal(exit.code, 0, p.stderr());
  const runs = new Map<string, number>();
  for (const name of readFileSync(runLog, 'utf8').split('\n').filter(Boolean)) runs.set(name, (runs.get(name) ?? 0) + 1);
  return { report, runs };
}

/**
 * What a migrated run shows as the original did: the same registry, the same jobs (the cron
 * added at run time too), the timeout once; and that it coordinated through the Redis at `redis`.
 */
export async function assertMigratedSame(original: MigratedRun, migrated: MigratedRun, redis: TestRedis): Promise<void> {
  assert.deepEqual(migrated.report, original.report);
  assert.deepEqual(migrated.report, { crons: ['notifications'], intervals: [], dynamicExists: false, source: '* * * * * *' });
  for (const r of [original, migrated]) {
    assert.deepEqual([...r.runs.keys()].sort(), ['dynamic', 'notifications', 'poll', 'unnamed', 'warmup']);
    assert.equal(r.runs.get('warmup'), 1);
    assert.ok((r.runs.get('notifications') ?? 0) >= 2 && (r.runs.get('poll') ?? 0) >= 4, JSON.stringify([...r.runs]));
  }
  const keys = await redis.client().keys('leasehold:*notifications*');
  assert.ok(keys.length > 0, 'the migrated application coordinated through the Redis of REDIS_URL');
}

/** One line of the run log test/fixtures/nestjs/app.ts writes. */
interface AppLine {
  ev: string;
  job: string;
  inst: string;
  t: number;
  tick?: number;
  dep?: string;
}

const appRuns = (runLog: string): AppLine[] => readRuns(runLog) as unknown as AppLine[];

/** Starts `n` processes of test/fixtures/nestjs/app.ts compiled as `app`, instances `nest0`, `nest1`, ... */
export function startNestApps(app: string, n: number, env: Record<string, string>): NodeProc[] {
  return Array.from({ length: n }, (_, i) => spawnNode([app], { LEASEHOLD_INSTANCE_ID: `nest${i}`, LOG_LEVEL: 'warn', ...env }, dirname(app)));
}

/** SIGTERM to each process; resolves once all have ended. */
export async function stopNestApps(procs: NodeProc[]): Promise<void> {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
}

/** SIGKILL to `victim` halfway between two whole seconds while nobody holds `jobId`'s lease. */
async function killedBetweenRuns(victim: NodeProc, redisUrl: string, jobId: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    for (const deadline = Date.now() + 10_000; ; await sleep(10)) {
      assert.ok(Date.now() < deadline, `the lease of ${jobId} was held at every mid-second for 10 s`);
      const ms = Date.now() % 1_000;
      if (ms >= 400 && ms <= 600 && (await redis.exists(keys(DEFAULT_PREFIX).lease(jobId))) === 0) break;
    }
    victim.kill('SIGKILL');
  } finally {
    redis.disconnect();
  }
}

/**
 * Three processes of `app` (test/fixtures/nestjs/app.ts compiled) on the Redis at `redisUrl`:
 * the installation @Cron runs once per tick on the injected instance, the instance @Interval
 * and the @Timeout in each; SIGKILL of the process that ran the last tick hands the next
 * ticks to the others, no tick running twice.
 */
export async function assertKilledHolderHandsOver(app: string, redisUrl: string): Promise<void> {
  const runLog = join(mkdtempSync(join(tmpdir(), 'leasehold-nest-')), 'runs.jsonl');
  const procs = startNestApps(app, 3, { REDIS_URL: redisUrl, RUN_LOG: runLog });
  try {
    const ready = await Promise.all(procs.map((p) => p.waitFor((l) => 'ready' in l, 60_000)));
    for (const r of ready) {
      assert.deepEqual(r, { ready: true, crons: ['Ticks.everySecond', 'controller-minute', 'slow'], intervals: ['local-interval'], timeouts: ['boot'] });
    }
    await sleep(4_000);
    const holder = appRuns(runLog).filter((l) => l.job === 'Ticks.everySecond').at(-1)?.inst;
    assert.ok(holder, 'an installation tick ran');
    const victim = procs[Number(holder.slice(4))] as NodeProc;
    // Killed between two runs. A process killed from its claim to its release keeps the tick's
    // lease for the lease's 30 s, by design (nobody can tell it dead from slow), and no node runs
    // the job until then (test/lost-runs.test.ts covers that case): mid-second, with no lease held.
    await killedBetweenRuns(victim, redisUrl, 'Ticks.everySecond');
    await victim.exited;
    const killedAt = Date.now();
    await sleep(4_000);
    const lines = appRuns(runLog);
    const ticks = lines.filter((l) => l.job === 'Ticks.everySecond');
    const perTick = new Map<number, number>();
    for (const l of ticks) perTick.set(l.tick ?? 0, (perTick.get(l.tick ?? 0) ?? 0) + 1);
    assert.deepEqual([...perTick].filter(([, c]) => c > 1), [], 'no tick ran twice');
    assert.ok(ticks.every((l) => l.dep === 'injected'), 'each run had the provider its instance was given');
    const afterKill = ticks.filter((l) => l.t > killedAt + 500);
    assert.ok(afterKill.length >= 2, `ticks after the kill: ${afterKill.length}`);
    assert.ok(afterKill.every((l) => l.inst !== holder), 'the killed process ran nothing more');
    for (const inst of ['nest0', 'nest1', 'nest2']) {
      assert.equal(lines.filter((l) => l.job === 'boot' && l.inst === inst).length, 1, `@Timeout ran once in ${inst}`);
      assert.ok(lines.filter((l) => l.job === 'local-interval' && l.inst === inst).length >= 3, `an instance-scoped @Interval ran in ${inst}`);
    }
  } finally {
    await stopNestApps(procs);
  }
}

/**
 * Three processes of `app` with its slow cron on (a run that ignores its abort) and a grace of
 * 1s: SIGTERM to the process running it ends that process after the grace, the run is recorded
 * interrupted (the status of a runner on the Redis at `redisUrl`), and once its lease runs out
 * another process starts the slow job.
 */
export async function assertSigtermInterrupts(app: string, redisUrl: string): Promise<void> {
  const runLog = join(mkdtempSync(join(tmpdir(), 'leasehold-nest-')), 'runs.jsonl');
  const procs = startNestApps(app, 3, { REDIS_URL: redisUrl, RUN_LOG: runLog, SLOW: '1', GRACE: '1s' });
  try {
    await Promise.all(procs.map((p) => p.waitFor((l) => 'ready' in l, 60_000)));
    const deadline = Date.now() + 15_000;
    let first: AppLine | undefined;
    while (!first && Date.now() < deadline) {
      first = appRuns(runLog).find((l) => l.job === 'slow');
      if (!first) await sleep(100);
    }
    assert.ok(first, 'the slow job started');
    const holder = procs[Number(first.inst.slice(4))] as NodeProc;
    const signalled = Date.now();
    holder.kill('SIGTERM');
    const exit = await holder.exited;
    const took = Date.now() - signalled;
    assert.ok(took >= 900 && took < 10_000, `the process exited ${took} ms after SIGTERM (grace 1s)`);
    assert.notEqual(exit.signal, 'SIGKILL');
    await sleep(3_000);
    const reader = createRunner({ redisUrl, instanceId: 'reader' });
    await reader.start();
    try {
      const slow = (await reader.status()).jobs.find((j) => j.id === 'slow');
      assert.ok(slow && slow.interrupted >= 1, `slow: ${JSON.stringify(slow)}`);
    } finally {
      await reader.stop();
    }
    // The run ignored its abort, so its lease (3s) runs out before another process may take a tick.
    const until = Date.now() + 15_000;
    const handedOver = (): boolean => appRuns(runLog).some((l) => l.job === 'slow' && l.t > signalled && l.inst !== first.inst);
    while (!handedOver() && Date.now() < until) await sleep(200);
    assert.ok(handedOver(), 'another process started the slow job after the handover');
  } finally {
    await stopNestApps(procs);
  }
}

/** What a compiled test/fixtures/nestjs/http-express.ts or http-fastify.ts prints once it listens. */
export interface ServedNest {
  readonly url: string;
  readonly nest: { readonly core: string; readonly adapter: string };
}

const READ = { authorization: 'Bearer read-T0ken-of-the-nest-app' };
const ADMIN = { authorization: 'Bearer admin-T0ken-of-the-nest-app' };

/**
 * Starts `app` (test/fixtures/nestjs/http-express.ts or http-fastify.ts, compiled) on the Redis
 * at `redisUrl` and asks its own HTTP server, over real HTTP: the app's route answers, and beside
 * it the status routes with their node header: the health (the probe and the report), the
 * metrics with leasehold's, the jobs (only with the read token), and a pause that needs the admin
 * token (refused without a token and with the read token), undone by a resume. Stops it with
 * SIGTERM; returns what it printed.
 */
export async function assertStatusRoutesServed(app: string, redisUrl: string): Promise<ServedNest> {
  const p = spawnNode([app], { REDIS_URL: redisUrl, LOG_LEVEL: 'warn' }, dirname(app));
  try {
    const served = (await p.waitFor((l) => typeof l['url'] === 'string', 60_000)) as unknown as ServedNest;
    const url = served.url.replace('[::1]', '127.0.0.1');
    assert.deepEqual(await (await fetch(`${url}/hello`)).json(), { hello: 'nest' });
    const live = await fetch(`${url}/health/live`);
    assert.equal(live.status, 200);
    assert.equal(live.headers.get('x-leasehold-node'), 'nest-http');
    const health = await fetch(`${url}/health`);
    assert.equal(health.status, 200);
    assert.equal(((await health.json()) as { status: string }).status, 'ok');
    const metrics = await fetch(`${url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(await metrics.text(), /^leasehold_job_interval_seconds\{job="nightly"\} /m);
    const bare = await fetch(`${url}/manage/jobs`);
    assert.equal(bare.status, 401);
    assert.equal(bare.headers.get('www-authenticate'), 'Bearer');
    const jobs = async (): Promise<string[][]> => ((await (await fetch(`${url}/manage/jobs`, { headers: READ })).json()) as { jobs: Array<{ id: string; state: string }> }).jobs.map((j) => [j.id, j.state]);
    assert.deepEqual(await jobs(), [['nightly', 'ok']]);
    const pause = `${url}/manage/jobs/nightly/pause`;
    assert.equal((await fetch(pause, { method: 'POST' })).status, 401);
    assert.equal((await fetch(pause, { method: 'POST', headers: READ })).status, 403);
    const paused = await fetch(pause, { method: 'POST', headers: ADMIN });
    assert.equal(paused.status, 200);
    assert.equal(((await paused.json()) as { paused: boolean }).paused, true);
    assert.deepEqual(await jobs(), [['nightly', 'paused']]);
    assert.equal((await fetch(`${url}/manage/jobs/nightly/resume`, { method: 'POST', headers: ADMIN })).status, 200);
    assert.deepEqual(await jobs(), [['nightly', 'ok']]);
    return served;
  } finally {
    p.kill('SIGTERM');
    await p.exited;
  }
}
