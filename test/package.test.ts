/**
 * The package as npm publishes it: `npm pack` holds exactly what a user needs, and a packed
 * copy installed into a throwaway project compiles under TypeScript's `node16`, `nodenext`
 * and `bundler` module resolutions, loads with `import` and `require()`, and its command runs.
 * Offline: the tarball is unpacked into the project's node_modules, and leasehold's
 * dependencies are linked from this repository's install. `npm run build` first.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ROOT } from './helpers/node.js';
import { installed, npm, packedProject, pkg } from './helpers/package.js';

interface PackedFile {
  readonly path: string;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? (f === 'node_modules' ? [] : filesUnder(p)) : [p];
  });
}

/** What a user needs: the compiled code and its declarations, the Lua scripts, the command, the README, licence and changelog. */
function expectedFiles(): string[] {
  const src = join(ROOT, 'src');
  const out = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'bin/leasehold.js'];
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

test('npm pack holds exactly the compiled code, its declarations, the Lua scripts, the command, README, LICENSE, CHANGELOG and package.json', () => {
  const [packed] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], ROOT)) as Array<{ files: PackedFile[] }>;
  assert.ok(packed);
  const files = packed.files.map((f) => f.path).sort();
  assert.deepEqual(files, expectedFiles());
  for (const f of files) assert.ok(!/^(src|test|bench|chaos|examples|scripts|infra|docs)\//.test(f) && !f.endsWith('.map'), f);
});

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
    const packed = packedProject(work);
    assert.equal(packed.tarball, `${pkg.name}-${pkg.version}.tgz`);
    project = packed.project;
    writeFileSync(join(project, 'package.json'), '{ "name": "consumer", "private": true, "type": "module" }\n');
    writeFileSync(join(project, 'consumer.ts'), CONSUMER);
    mkdirSync(join(project, 'cjs'));
    writeFileSync(join(project, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
    writeFileSync(join(project, 'cjs', 'consumer.ts'), CONSUMER);
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  function tsc(dir: string, name: string, options: Record<string, string>): void {
    // Every declaration file is checked (the package's own, its dependencies', @types/node), bar
    // TypeScript's own lib.*.d.ts: the same in every project, they say nothing of the package and
    // cost half of each compile.
    const config = { compilerOptions: { ...options, target: 'es2022', strict: true, noEmit: true, types: ['node'], skipLibCheck: false, skipDefaultLibCheck: true }, files: ['consumer.ts'] };
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

  for (const name of ['node16', 'nodenext']) {
    test(`a CommonJS consumer compiles with moduleResolution ${name}, types and values alike`, () => tsc(join(project, 'cjs'), name, RESOLUTIONS[name] ?? {}));
  }

  test('the declarations of require() name exactly the values require() returns', () => {
    const declared = [...readFileSync(join(project, 'node_modules', 'leasehold', 'dist', 'require.d.cts'), 'utf8').matchAll(/^export declare const (\w+):/gm)].map((m) => m[1]).sort();
    writeFileSync(join(project, 'cjs', 'keys.cjs'), "console.log(JSON.stringify(Object.keys(require('leasehold')).sort()));\n");
    const returned = JSON.parse(execFileSync(process.execPath, ['keys.cjs'], { cwd: join(project, 'cjs'), encoding: 'utf8' })) as string[];
    assert.ok(returned.includes('createRunner'), returned.join(', '));
    assert.deepEqual(declared, returned);
  });

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
    writeFileSync(join(project, 'jobs.mjs'), "import { defineJob } from 'leasehold';\nexport default [defineJob({ id: 'tick', fixedRate: '10s', run: async () => {} })];\n");
    assert.equal(execFileSync(process.execPath, [bin, 'check', 'jobs.mjs'], { cwd: project, encoding: 'utf8' }), 'jobs.mjs: 1 job ok\n');
  });

  describe('without the optional peer dependencies', () => {
    const bin = (): string => join(project, 'node_modules', 'leasehold', 'bin', 'leasehold.js');
    const run = (args: string[], env: Record<string, string> = {}): { code: number; stdout: string; stderr: string } => {
      const r = spawnSync(process.execPath, [bin(), ...args], { cwd: project, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
      return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    };
    const peers = pkg.peerDependencies ?? {};

    test('none of them is a dependency: npm install leasehold leaves each out', () => {
      for (const name of ['bullmq', '@modelcontextprotocol/sdk', 'zod', 'pino-pretty', 'tsx']) {
        assert.equal(pkg.dependencies[name], undefined, name);
        assert.ok(peers[name], `${name} is a peer dependency`);
        assert.deepEqual(pkg.peerDependenciesMeta?.[name], { optional: true }, name);
        assert.ok(!existsSync(join(project, 'node_modules', name)), `${name} is not in the project`);
      }
    });

    test('a .ts jobs module loads where Node strips types, and names tsx where it does not', () => {
      writeFileSync(join(project, 'typed.ts'), "import { defineJob, type JobContext } from 'leasehold';\nconst every: string = '10s';\nexport default [defineJob({ id: 'typed', fixedRate: every, run: async (ctx: JobContext) => void ctx })];\n");
      const r = run(['check', 'typed.ts']);
      const strips = (process.features as { typescript?: unknown }).typescript !== undefined;
      if (strips) {
        assert.equal(r.stdout, 'typed.ts: 1 job ok\n', r.stderr);
      } else {
        assert.equal(r.code, 2, r.stderr);
        assert.equal(r.stderr, `leasehold: .ts modules on Node ${process.versions.node} (Node strips types itself from 22.18 and 23.6 on) need tsx: npm install tsx@${peers['tsx']}\n`);
      }
    });

    test('a queue executor names bullmq, from check and from an embedding service', () => {
      const module = "import { defineTask } from 'leasehold';\nexport const executors = { mail: { kind: 'queue' } };\nexport const tasks = [defineTask({ id: 'send', executor: 'mail', run: async () => {} })];\nexport default [];\n";
      writeFileSync(join(project, 'queued.mjs'), module);
      const r = run(['check', 'queued.mjs']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr + r.stdout, new RegExp(`queue executors need bullmq: npm install bullmq@\\${peers['bullmq']}`));
      writeFileSync(join(project, 'embed.mjs'), [
        "import { createRunner, defineTask, isLeaseholdError } from 'leasehold';",
        "const runner = createRunner({ executors: { mail: { kind: 'queue' } } });",
        "try { runner.addTask(defineTask({ id: 'send', executor: 'mail', run: async () => {} })); } catch (err) { console.log(isLeaseholdError(err, 'missingPeer'), err.message); }",
        '',
      ].join('\n'));
      const out = spawnSync(process.execPath, ['embed.mjs'], { cwd: project, encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'silent' }, timeout: 30_000 });
      assert.equal(out.stdout, `true queue executors need bullmq: npm install bullmq@${peers['bullmq']}\n`, out.stderr);
    });

    test('leasehold mcp names the MCP SDK, and LOG_FORMAT=pretty names pino-pretty; both exit 2', () => {
      const mcp = run(['mcp']);
      assert.equal(mcp.code, 2, mcp.stderr);
      assert.equal(mcp.stderr, `leasehold: the MCP tools need @modelcontextprotocol/sdk: npm install @modelcontextprotocol/sdk@${peers['@modelcontextprotocol/sdk']}\n`);
      const pretty = run(['start', '--jobs', 'jobs.mjs', '--port', '0'], { LOG_FORMAT: 'pretty' });
      assert.equal(pretty.code, 2, pretty.stderr);
      assert.match(pretty.stderr, new RegExp(`readable logs \\(LOG_FORMAT=pretty\\) need pino-pretty: npm install pino-pretty@\\${peers['pino-pretty']}`));
    });

    test('once installed, each optional part loads: tsx for a .ts module with a decorator', () => {
      symlinkSync(installed('tsx'), join(project, 'node_modules', 'tsx'), 'dir');
      symlinkSync(installed('esbuild'), join(project, 'node_modules', 'esbuild'), 'dir');
      const scope = join(project, 'node_modules', '@esbuild');
      mkdirSync(scope, { recursive: true });
      for (const bin of readdirSync(installed('@esbuild'))) symlinkSync(join(installed('@esbuild'), bin), join(scope, bin), 'dir');
      writeFileSync(join(project, 'decorated.ts'), "import { Scheduled } from 'leasehold';\nexport class Reports {\n  @Scheduled({ fixedRate: '10s' })\n  async refresh(): Promise<void> {}\n}\nexport default [new Reports()];\n");
      const r = run(['check', 'decorated.ts']);
      assert.equal(r.stdout, 'decorated.ts: 1 job ok\n', r.stderr);
    });
  });
});
