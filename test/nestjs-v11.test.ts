/**
 * leasehold/nestjs on Nest 11, as a user installs it: a throwaway project whose node_modules
 * holds the packed leasehold (test/helpers/package.ts) and Nest 11 as `@nestjs/common`,
 * `@nestjs/core` and `@nestjs/platform-express` (copied from this repository's
 * `@nestjs/common-v11`, `@nestjs/core-v11` and `@nestjs/platform-express-v11`, the aliases
 * package.json pins; the rest of the repository runs Nest 12). A Nest 11
 * application (test/fixtures/nestjs-v11/app.ts) is compiled there by tsc, its declarations
 * checked against Nest 11's, as CommonJS, and run as two processes on one Redis: the
 * installation `@Cron` runs once per tick on the instance Nest created with its injected
 * dependency, the instance `@Interval` and the `@Timeout` run in both, the SchedulerRegistry
 * holds the crons (a controller's too) and the interval; one process has its options from
 * `LeaseholdModule.forRoot`, the other from `forRootAsync`. SIGTERM closes each application, after which the process ends by itself with exit code 0.
 * The same project compiles, against Nest 11's declarations too, what test/nestjs.test.ts and
 * test/nestjs-migrated.test.ts run on Nest 12 (as ES modules, in folders of their own), and
 * the same scenarios of test/helpers/nest.ts run them: the application written for
 * @nestjs/schedule (with @nestjs/schedule, whose peers take Nest 11, and again with its
 * imports changed to leasehold/nestjs) runs the same; three processes of test/fixtures/nestjs
 * hand the installation @Cron over when its holder gets SIGKILL, and record a run that outlasts
 * the grace `interrupted` when its process gets SIGTERM; and, as test/nestjs-http.test.ts on
 * Nest 12's Express adapter, the application of test/fixtures/nestjs/http-express.ts on Nest 11's
 * serves leasehold's status routes beside its own: health, metrics, the jobs with the read token,
 * and a pause only with the admin token. (Nest's fastify adapter is tested on Nest 12 only.)
 * Offline; `npm run build` first.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRedis, type TestRedis } from './helpers/redis.js';
import { ROOT, spawnNode, type NodeProc } from './helpers/node.js';
import { assertKilledHolderHandsOver, assertMigratedSame, assertSigtermInterrupts, assertStatusRoutesServed, compileNest, MIGRATED_FIXTURE, migrateImports, runMigrated } from './helpers/nest.js';
import { copyPackage, installed, packedProject, pkg } from './helpers/package.js';
import { readRuns } from './helpers/runs.js';

/** The Nest 11 version package.json pins, from its alias (`npm:@nestjs/common@11.x.y`). */
function pinned(alias: string, name: string): string {
  const spec = pkg.devDependencies[alias] ?? '';
  const version = spec.startsWith(`npm:${name}@`) ? spec.slice(`npm:${name}@`.length) : '';
  assert.match(version, /^11\.\d+\.\d+$/, `${alias} pins Nest 11 exactly: ${spec}`);
  return version;
}

const COMMON = pinned('@nestjs/common-v11', '@nestjs/common');
const CORE = pinned('@nestjs/core-v11', '@nestjs/core');
const EXPRESS = pinned('@nestjs/platform-express-v11', '@nestjs/platform-express');
const NEST = ['@nestjs/common', '@nestjs/core'];
const NEST_HTTP = [...NEST, '@nestjs/platform-express'];
/** The folders of the project holding the ES-module applications, each with its package.json. */
const ESM = ['nest-app', 'original', 'migrated'];

interface Run {
  job: string;
  inst: string;
  t: number;
  tick?: number;
  dep?: string;
}

describe('leasehold/nestjs in a Nest 11 project', () => {
  let redis: TestRedis;
  let work: string;
  let project: string;

  before(async () => {
    redis = await startRedis();
    work = mkdtempSync(join(tmpdir(), 'leasehold-nest11-'));
    project = packedProject(work).project;
    // No "type": the project is CommonJS, as `nest new` makes it.
    writeFileSync(join(project, 'package.json'), '{ "name": "nest11-app", "private": true }\n');
    copyPackage(project, '@nestjs/common', installed('@nestjs/common-v11'), NEST);
    copyPackage(project, '@nestjs/core', installed('@nestjs/core-v11'), NEST);
    copyPackage(project, '@nestjs/platform-express', installed('@nestjs/platform-express-v11'), NEST);
    // Express ships no declarations; a Nest project has them (`nest new` adds @types/express).
    copyPackage(project, '@types/express', installed('@types/express'));
    copyPackage(project, '@nestjs/schedule', installed('@nestjs/schedule'), NEST);
    copyFileSync(join(ROOT, 'test', 'fixtures', 'nestjs-v11', 'app.ts'), join(project, 'app.ts'));
    for (const dir of ESM) {
      mkdirSync(join(project, dir));
      writeFileSync(join(project, dir, 'package.json'), '{ "type": "module" }\n');
    }
    for (const f of ['app.ts', 'http-app.ts', 'http-express.ts']) copyFileSync(join(ROOT, 'test', 'fixtures', 'nestjs', f), join(project, 'nest-app', f));
    const tasks = readFileSync(join(MIGRATED_FIXTURE, 'tasks.ts'), 'utf8');
    writeFileSync(join(project, 'original', 'tasks.ts'), tasks);
    writeFileSync(join(project, 'migrated', 'tasks.ts'), migrateImports(tasks));
    // One tsc run for all (each file CommonJS or ES module as its folder says).
    compileNest(project, ['app.ts', 'nest-app/app.ts', 'nest-app/http-app.ts', 'nest-app/http-express.ts', 'original/tasks.ts', 'migrated/tasks.ts'], 'the Nest 11 applications', true);
  });
  after(async () => {
    await redis?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('the project resolves @nestjs/common, @nestjs/core and @nestjs/platform-express to Nest 11', () => {
    // Away from this repository: walking up from the project, Node would find its Nest 12.
    assert.ok(!project.startsWith(ROOT), project);
    const script = `console.log(JSON.stringify(${JSON.stringify(NEST_HTTP)}.map((p) => require(p + '/package.json').version)))`;
    for (const dir of ['.', ...ESM]) {
      const out = execFileSync(process.execPath, ['-e', script], { cwd: join(project, dir), encoding: 'utf8' });
      assert.deepEqual(JSON.parse(out), [COMMON, CORE, EXPRESS], dir);
    }
  });

  test('two processes: the installation @Cron runs once per tick with its injected dependency, the instance @Interval and the @Timeout in each, and SIGTERM ends both with exit code 0', { timeout: 60_000 }, async () => {
    const runLog = join(work, 'runs.jsonl');
    // One process has its options from forRoot, the other from forRootAsync's factory.
    const procs: NodeProc[] = (['sync', 'async'] as const).map((module) =>
      spawnNode([join(project, 'app.js')], { REDIS_URL: redis.url, LEASEHOLD_INSTANCE_ID: `nest11-${module}`, MODULE: module, RUN_LOG: runLog, LOG_LEVEL: 'warn' }, project),
    );
    try {
      const ready = await Promise.all(procs.map((p) => p.waitFor((l) => 'ready' in l, 30_000)));
      for (const r of ready) {
        const { nextIn, ...rest } = r as { nextIn: unknown };
        assert.deepEqual(rest, {
          ready: true,
          nest: { common: COMMON, core: CORE, commonOfLeasehold: COMMON, coreOfLeasehold: CORE, commonOfCore: COMMON },
          crons: ['Ticks.everySecond', 'controller-minute'],
          active: true,
          intervals: ['per-process'],
        });
        assert.ok(typeof nextIn === 'number' && nextIn > -1_000 && nextIn <= 1_000, `the registry's next tick is within a second: ${String(nextIn)}`);
      }
      await sleep(4_000);
    } finally {
      for (const p of procs) p.kill('SIGTERM');
    }
    const exits = await Promise.all(procs.map((p) => p.exited));
    for (const [i, p] of procs.entries()) {
      assert.deepEqual(exits[i], { code: 0, signal: null }, `process ${i} ended by itself; stderr: ${p.stderr()}`);
      assert.ok(p.lines.some((l) => l['closed'] === true), `process ${i} closed its application`);
      assert.equal(p.stderr(), '', `process ${i} wrote no error`);
    }

    const runs = readRuns(runLog) as unknown as Run[];
    const ticks = runs.filter((r) => r.job === 'Ticks.everySecond');
    const perTick = new Map<number, string[]>();
    for (const r of ticks) perTick.set(r.tick ?? 0, [...(perTick.get(r.tick ?? 0) ?? []), r.inst]);
    assert.ok(perTick.size >= 3, `installation ticks run: ${perTick.size}`);
    assert.deepEqual([...perTick].filter(([, insts]) => insts.length > 1), [], 'no tick ran in both processes');
    assert.ok(ticks.every((r) => r.dep === 'injected'), 'each run had the provider Nest injected');
    for (const inst of ['nest11-sync', 'nest11-async']) {
      const local = runs.filter((r) => r.job === 'per-process' && r.inst === inst);
      assert.ok(local.length >= 4, `the instance @Interval ran in ${inst}: ${local.length} times`);
      assert.ok(local.every((r) => r.dep === 'injected'));
      assert.equal(runs.filter((r) => r.job === 'boot' && r.inst === inst && r.dep === 'injected').length, 1, `@Timeout ran once in ${inst}`);
    }
  });

  test('the application written for @nestjs/schedule runs the same on Nest 11 with its imports changed to leasehold/nestjs', { timeout: 60_000 }, async () => {
    const [original, migrated] = await Promise.all([runMigrated(join(project, 'original'), {}), runMigrated(join(project, 'migrated'), { REDIS_URL: redis.url })]);
    await assertMigratedSame(original, migrated, redis);
  });

  test('three processes: SIGKILL of the installation @Cron\'s holder hands the next ticks to another, no tick running twice', { timeout: 60_000 }, async () => {
    await assertKilledHolderHandsOver(join(project, 'nest-app', 'app.js'), redis.url);
  });

  test('three processes: SIGTERM with shutdown hooks records a run that outlasts the grace interrupted, and another process takes the next tick', { timeout: 60_000 }, async () => {
    await assertSigtermInterrupts(join(project, 'nest-app', 'app.js'), redis.url);
  });

  test('the status routes answer through the Nest 11 app\'s own HTTP server on its Express adapter: health, metrics, the jobs, and a pause only with the admin token', { timeout: 60_000 }, async () => {
    // A Redis of its own: the jobs listed are this application's only.
    const own = await startRedis();
    try {
      const { nest } = await assertStatusRoutesServed(join(project, 'nest-app', 'http-express.js'), own.url);
      assert.deepEqual(nest, { core: CORE, adapter: EXPRESS }, 'the serving process ran Nest 11 and its Express adapter 11');
    } finally {
      await own.stop();
    }
  });
});
