/**
 * The package as npm publishes it: `npm pack` holds exactly what a user needs, and a packed
 * copy installed into a throwaway project compiles under TypeScript's `node16`, `nodenext`
 * and `bundler` module resolutions, loads with `import` and `require()`, and its command runs.
 * Offline: the tarball is unpacked into the project's node_modules, and leasehold's
 * dependencies are linked from this repository's install. `npm run build` first.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { ROOT } from './helpers/node.js';

interface PackedFile {
  readonly path: string;
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string> };

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? (f === 'node_modules' ? [] : filesUnder(p)) : [p];
  });
}

/** What a user needs: the compiled code and its declarations, the Lua scripts, the command, the README. */
function expectedFiles(): string[] {
  const src = join(ROOT, 'src');
  const out = ['package.json', 'README.md', 'bin/leasehold.js'];
  if (existsSync(join(ROOT, 'LICENSE'))) out.push('LICENSE');
  // The status page's browser code ships as one bundle and stylesheet, built from http/ui/client.
  out.push('dist/http/ui/assets/app.js', 'dist/http/ui/assets/app.css');
  for (const file of filesUnder(src)) {
    const rel = relative(src, file);
    if (rel.endsWith('.d.ts') || rel.startsWith('http/ui/client/')) continue;
    if (rel.endsWith('.cts')) out.push(`dist/${rel.replace(/\.cts$/, '.cjs')}`, `dist/${rel.replace(/\.cts$/, '.d.cts')}`);
    else if (rel.endsWith('.ts')) out.push(`dist/${rel.replace(/\.ts$/, '.js')}`, `dist/${rel.replace(/\.ts$/, '.d.ts')}`);
    else if (rel.endsWith('.lua')) out.push(`dist/${rel}`);
  }
  return out.sort();
}

test('npm pack holds exactly the compiled code, its declarations, the Lua scripts, the command, README and package.json', () => {
  const [packed] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], ROOT)) as Array<{ files: PackedFile[] }>;
  assert.ok(packed);
  const files = packed.files.map((f) => f.path).sort();
  assert.deepEqual(files, expectedFiles());
  for (const f of files) assert.ok(!/^(src|test|bench|chaos|examples|scripts|infra|docs)\//.test(f) && !f.endsWith('.map'), f);
});

/** Where this repository's dist/ finds a package: the nearest node_modules up from it. */
function installed(name: string): string {
  for (let dir = join(ROOT, 'dist'); ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${name} is not installed`);
  }
}

const CONSUMER = `import { createRunner, defineJob, fromEnv, isLeaseholdError, ErrorCodes, LeaseholdError, type JobContext, type JobDefinition, type Runner } from 'leasehold';

const digest = defineJob({
  id: 'daily-digest',
  scope: 'installation',
  cron: '0 0 8 * * MON-FRI',
  zone: 'Europe/Berlin',
  async run(ctx) {
    ctx.log.info({ tick: ctx.scheduledAt, fence: ctx.fencingToken }, 'digest');
  },
});
const refresh: JobDefinition = { id: 'refresh', fixedRate: fromEnv('REFRESH_RATE', '30s'), run: (ctx: JobContext) => ctx.signal.aborted };

export function wire(): Runner {
  const runner = createRunner({ redisUrl: process.env['REDIS_URL'] });
  for (const job of [digest, refresh]) runner.add(job);
  return runner;
}

export function explain(err: unknown): string {
  if (isLeaseholdError(err, ErrorCodes.invalidCron)) return err.message;
  return err instanceof LeaseholdError ? err.code : String(err);
}
`;

const RESOLUTIONS: Record<string, Record<string, string>> = {
  node16: { module: 'node16', moduleResolution: 'node16' },
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
};

describe('the packed package installed into a project', () => {
  let work: string;
  let project: string;

  before(() => {
    work = mkdtempSync(join(tmpdir(), 'leasehold-package-'));
    const tarball = npm(['pack', '--ignore-scripts', '--pack-destination', work], ROOT).trim().split('\n').at(-1) ?? '';
    assert.equal(tarball, `${pkg.name}-${pkg.version}.tgz`);
    project = join(work, 'project');
    const modules = join(project, 'node_modules');
    mkdirSync(join(modules, '@types'), { recursive: true });
    execFileSync('tar', ['-xzf', join(work, tarball), '-C', modules]);
    renameSync(join(modules, 'package'), join(modules, 'leasehold'));
    for (const dep of Object.keys(pkg.dependencies)) {
      mkdirSync(dirname(join(modules, dep)), { recursive: true }); // a scoped package's scope
      symlinkSync(installed(dep), join(modules, dep), 'dir');
    }
    symlinkSync(installed('@types/node'), join(modules, '@types', 'node'), 'dir');
    writeFileSync(join(project, 'package.json'), '{ "name": "consumer", "private": true, "type": "module" }\n');
    writeFileSync(join(project, 'consumer.ts'), CONSUMER);
    mkdirSync(join(project, 'cjs'));
    writeFileSync(join(project, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
    writeFileSync(join(project, 'cjs', 'consumer.ts'), CONSUMER);
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  function tsc(dir: string, name: string, options: Record<string, string>): void {
    const config = { compilerOptions: { ...options, target: 'es2022', strict: true, noEmit: true, types: ['node'], skipLibCheck: false }, files: ['consumer.ts'] };
    writeFileSync(join(dir, `tsconfig.${name}.json`), JSON.stringify(config, null, 2));
    try {
      execFileSync(process.execPath, [join(installed('typescript'), 'bin', 'tsc'), '-p', `tsconfig.${name}.json`], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      assert.fail(`tsc (${name}) failed:\n${(err as { stdout?: string }).stdout ?? String(err)}`);
    }
  }

  for (const [name, options] of Object.entries(RESOLUTIONS)) {
    test(`an ES module consumer compiles with moduleResolution ${options['moduleResolution']}`, () => tsc(project, name, options));
  }

  test('a CommonJS consumer compiles with moduleResolution nodenext', () => tsc(join(project, 'cjs'), 'nodenext', RESOLUTIONS['nodenext'] ?? {}));

  test('import and require() both get the package, the same instance', () => {
    writeFileSync(join(project, 'both.mjs'), [
      "import { createRequire } from 'node:module';",
      "import * as imported from 'leasehold';",
      "const required = createRequire(import.meta.url)('leasehold');",
      "console.log(typeof imported.createRunner, typeof required.createRunner, imported.LeaseholdError === required.LeaseholdError);",
      '',
    ].join('\n'));
    const out = execFileSync(process.execPath, ['both.mjs'], { cwd: project, encoding: 'utf8' });
    assert.equal(out, 'function function true\n');
  });

  test('its command runs from node_modules: --version, check', () => {
    const bin = join(project, 'node_modules', 'leasehold', 'bin', 'leasehold.js');
    assert.equal(execFileSync(process.execPath, [bin, '--version'], { cwd: project, encoding: 'utf8' }), `${pkg.version}\n`);
    writeFileSync(join(project, 'jobs.ts'), "import { defineJob } from 'leasehold';\nexport default [defineJob({ id: 'tick', fixedRate: '10s', run: async () => {} })];\n");
    assert.equal(execFileSync(process.execPath, [bin, 'check', 'jobs.ts'], { cwd: project, encoding: 'utf8' }), 'jobs.ts: 1 job ok\n');
  });
});
