/**
 * The code of the README and of every page under docs/ stays true: every ```ts block
 * type-checks under `--strict` against the built package (and, in the migration guides, against
 * the libraries they migrate from), every jobs module among them loads and passes
 * `leasehold check`, and every `leasehold next` shown with its output prints that output. A
 * plain job object is accepted where the examples pass one, and a wrong one is refused.
 *
 * Each page's blocks are modules of their own in a folder of the page; a block that opens with
 * `// <name>.ts` is that file (`// jobs.ts` the `./jobs.js` the page's other blocks import; a
 * page that imports it without showing it gets the one of guide/jobs.md). The user's own
 * functions the examples call are declared in {@link EXAMPLES_DTS}. Blocks that use NestJS are
 * compiled as a Nest project is, with `experimentalDecorators`. `npm run build` first.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docPages } from './helpers/docs.js';
import { ROOT } from './helpers/node.js';

/**
 * The functions and values the examples take from the user's own code: the examples'
 * project's `examples.d.ts` (not a file of this repository, whose type check would then know
 * them as globals too).
 */
const EXAMPLES_DTS = `import type { RequestListener } from 'node:http';

declare global {
  /** Sends the daily digest; a write guarded by the fencing token. */
  function sendDigest(options: { signal: AbortSignal; fence: number | undefined }): Promise<void>;
  /** Refreshes a cache of this node's own. */
  function refreshLocalCache(): Promise<void>;
  /** Sends what waits in the outbox, until the signal aborts. */
  function drain(signal: AbortSignal): Promise<void>;
  /** The rows to purge, in batches. */
  function findBatches(): Promise<string[][]>;
  /** Deletes a batch where the fence is below the token. */
  function purge(batch: string[], fencingToken: number | undefined): Promise<void>;
  /** A nightly cleanup. */
  function cleanup(): Promise<void>;
  /** Sends one mail. */
  function sendMail(to: string): Promise<void>;
  /** Who gets the digest. */
  function recipients(): Promise<string[]>;
  /** Backs the database up, until the signal aborts. */
  function runNightlyBackup(signal?: AbortSignal): Promise<void>;
  /** Deletes old rows, until the signal aborts. */
  function purgeOldRows(signal?: AbortSignal): Promise<void>;
  /** An existing HTTP app (an Express app is a request listener too). */
  const app: RequestListener;
}
`;

interface Block {
  readonly page: string;
  readonly line: number;
  readonly code: string;
  /** The file it is written to, relative to the examples' project. */
  readonly file: string;
}

/** A page's ```ts blocks (a code group's `ts [title]` ones included) with the files they become. */
function blocks(page: string): Block[] {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const dir = page.replace(/\.md$/, '').replace(/[/.]/g, '-');
  const out: Block[] = [];
  for (const m of text.matchAll(/^```ts(?: \[[^\]\n]*\])?\n([\s\S]*?)^```$/gm)) {
    const line = text.slice(0, m.index).split('\n').length + 1;
    const code = m[1] ?? '';
    const name = /^\/\/ ([\w.-]+)\.ts\n/.exec(code)?.[1] ?? `line-${line}`;
    out.push({ page, line, code, file: `${dir}/${name}.ts` });
  }
  return out;
}

const all = docPages().flatMap(blocks);
const nest = (b: Block): boolean => /from '@nestjs\//.test(b.code);

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-docs-code-'));
  // Every package this repository has, and leasehold itself as the built package.
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry !== 'leasehold' && !entry.startsWith('.')) symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry), 'dir');
  }
  symlinkSync(ROOT, join(modules, 'leasehold'), 'dir');
  writeFileSync(join(dir, 'examples.d.ts'), EXAMPLES_DTS);
  writeFileSync(join(dir, 'package.json'), '{ "name": "docs-examples", "private": true, "type": "module" }\n');
  for (const b of all) {
    mkdirSync(join(dir, b.file, '..'), { recursive: true });
    writeFileSync(join(dir, b.file), b.code);
  }
  // A page that imports ./jobs.js without showing it imports the jobs module of guide/jobs.md.
  const canonical = all.find((b) => b.page === join('docs', 'guide', 'jobs.md') && b.file.endsWith('/jobs.ts'));
  assert.ok(canonical, 'docs/guide/jobs.md shows a jobs module (`// jobs.ts`)');
  for (const b of all) {
    const jobs = join(dir, b.file, '..', 'jobs.ts');
    if (b.code.includes("from './jobs.js'") && !existsSync(jobs)) copyFileSync(join(dir, canonical.file), jobs);
  }
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Type-checks `files` in the examples' project with `options` added; the compiler's output, '' when it compiles. */
function tsc(name: string, files: string[], options: Record<string, unknown> = {}): string {
  const config = {
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', moduleDetection: 'force', types: ['node'], skipLibCheck: true, ...options },
    files: ['examples.d.ts', ...files],
  };
  writeFileSync(join(dir, `tsconfig.${name}.json`), JSON.stringify(config, null, 2));
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', `tsconfig.${name}.json`], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return '';
  } catch (err) {
    return (err as { stdout?: string }).stdout ?? String(err);
  }
}

/** The compiler's complaints with each file named by its page and line (`docs-guide-jobs/line-12.ts` is the block on line 12 of docs/guide/jobs.md). */
function located(out: string): string {
  return out.replace(/^([\w-]+)\/([\w.-]+)\.ts\((\d+),(\d+)\)/gm, (whole, folder: string, file: string, line: string) => {
    const block = all.find((b) => b.file === `${folder}/${file}.ts`);
    return block ? `${block.page}:${block.line + Number(line) - 1} (${whole})` : whole;
  });
}

test('the README and the docs have TypeScript examples, each file named once per page', () => {
  assert.ok(all.length >= 30, `found ${all.length} blocks`);
  for (const page of ['README.md', join('docs', 'guide', 'getting-started.md'), join('docs', 'migrate', 'node-cron.md'), join('docs', 'migrate', 'nestjs-schedule.md')]) {
    assert.ok(all.some((b) => b.page === page), `${page} has a TypeScript example`);
  }
  const files = all.map((b) => b.file);
  assert.deepEqual(files.filter((f, i) => files.indexOf(f) !== i), [], 'two blocks of one page open with the same `// <name>.ts`');
});

test('every TypeScript example compiles under --strict against the built package', () => {
  const out = tsc('plain', all.filter((b) => !nest(b)).map((b) => b.file));
  assert.equal(located(out), '', 'the examples do not compile');
});

test('the NestJS examples compile as a Nest project does (experimentalDecorators)', () => {
  const files = all.filter(nest).map((b) => b.file);
  assert.ok(files.length >= 3, `found ${files.length} NestJS blocks`);
  const out = tsc('nest', files, { experimentalDecorators: true, emitDecoratorMetadata: true });
  assert.equal(located(out), '', 'the NestJS examples do not compile');
});

test('every jobs module shown loads and passes leasehold check', () => {
  const modules = all.filter((b) => b.file.endsWith('/jobs.ts'));
  assert.ok(modules.length >= 5, `found ${modules.length} jobs modules`);
  for (const b of modules) {
    const cwd = join(dir, b.file, '..');
    try {
      const out = execFileSync(process.execPath, [join(ROOT, 'bin', 'leasehold.js'), 'check', 'jobs.ts'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      assert.match(out, /^jobs\.ts: \d+ jobs? ok\n$/, `${b.page}:${b.line}`);
    } catch (err) {
      assert.fail(`${b.page}:${b.line}: leasehold check failed:\n${(err as { stderr?: string }).stderr ?? String(err)}`);
    }
  }
});

test('every leasehold next shown with its output prints that output', () => {
  let shown = 0;
  for (const page of docPages()) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    for (const m of text.matchAll(/^```sh\n\$ npx leasehold (next .*)\n([\s\S]*?)^```$/gm)) {
      shown++;
      const args = [...(m[1] ?? '').matchAll(/"([^"]*)"|(\S+)/g)].map((a) => a[1] ?? a[2] ?? '');
      const out = execFileSync(process.execPath, [join(ROOT, 'bin', 'leasehold.js'), ...args], { encoding: 'utf8' });
      assert.equal(out, m[2], `${page}: leasehold ${m[1] ?? ''}`);
    }
  }
  assert.ok(shown >= 1, 'the docs show leasehold next with its output');
});

/**
 * Compiles each of `modules` (name: code) as a module of the examples' project, in one program
 * (each file is a module of its own: none sees the others); the compiler's complaints about each
 * file, '' when it compiles, and under '' any complaint that names none of them.
 */
function compileEach(modules: Record<string, string>): Record<string, string> {
  const names = Object.keys(modules);
  for (const name of names) writeFileSync(join(dir, `${name}.ts`), modules[name] ?? '');
  const out = tsc(names.join('+'), names.map((name) => `${name}.ts`));
  // A complaint starts on a line of its own; the indented lines after it belong to it.
  const complaints = out.split(/\n(?=\S)/).filter((c) => c.trim() !== '').map((c) => (c.endsWith('\n') ? c : `${c}\n`));
  const of = (name: string): string => complaints.filter((c) => c.startsWith(`${name}.ts(`)).join('');
  return { ...Object.fromEntries(names.map((name) => [name, of(name)])), '': complaints.filter((c) => !names.some((name) => c.startsWith(`${name}.ts(`))).join('') };
}

test('runner.add takes a plain job declared before it is added; a wrong scope is still an error', () => {
  const { 'plain-jobs': accepted, 'bad-scope': refused = '', '': elsewhere } = compileEach({
    'plain-jobs': [
      "import { createRunner, defineJob } from 'leasehold';",
      'const runner = createRunner({});',
      "runner.add(defineJob({ id: 'typed', scope: 'installation', cron: '0 */5 * * * *', async run(ctx) { await purge([], ctx.fencingToken); } }));",
      "const nightly = { id: 'nightly', scope: 'installation', cron: '0 0 3 * * *', run: cleanup };",
      'runner.add(nightly);',
      "const jobs = [nightly, { id: 'refresh', fixedRate: '30s', run: async () => refreshLocalCache() }];",
      'for (const job of jobs) runner.add(job);',
      "runner.add({ id: 'inline', scope: 'installation', fixedRate: '1m', async run(ctx) { await purge([], ctx.fencingToken); } });",
      '',
    ].join('\n'),
    'bad-scope': [
      "import { createRunner } from 'leasehold';",
      "createRunner({}).add({ id: 'typo', scope: 'instalation', cron: '0 0 3 * * *', run: cleanup });",
      "createRunner({}).add({ id: 'unknown', fixedRate: '1s', retries: 3, run: cleanup });",
      '',
    ].join('\n'),
  });
  assert.equal(accepted, '');
  assert.equal(elsewhere, '');
  assert.match(refused, /bad-scope\.ts\(2,\d+\): error TS2769: No overload matches this call\.\n(?:\s+.*\n)*?\s+Type '"instalation"' is not assignable to type 'JobScope \| undefined'\. Did you mean '"installation"'\?/);
  assert.match(refused, /bad-scope\.ts\(3,\d+\): error TS2769: No overload matches this call\.\n(?:\s+.*\n)*?\s+Object literal may only specify known properties, and 'retries' does not exist/);
});
