/**
 * Every ```ts block of the README type-checks under `--strict` against the built package, so
 * the examples cannot rot. Each block is a module of its own; the block that opens with
 * `// jobs.ts` is the `./jobs.js` the others import; the user's own functions the examples
 * call are declared in {@link EXAMPLES_DTS}. `npm run build` first.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './helpers/node.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

/**
 * The functions and values the README's examples take from the user's own code: the
 * examples' project's `examples.d.ts` (not a file of this repository, whose type check would
 * then know them as globals too).
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
  /** An existing HTTP app (an Express app is a request listener too). */
  const app: RequestListener;
}
`;

/** The README's ```ts blocks with the line each starts on. */
function blocks(): Array<{ line: number; code: string }> {
  const out: Array<{ line: number; code: string }> = [];
  for (const m of readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)) {
    out.push({ line: readme.slice(0, m.index).split('\n').length + 1, code: m[1] ?? '' });
  }
  return out;
}

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-readme-'));
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  symlinkSync(ROOT, join(dir, 'node_modules', 'leasehold'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', 'fastify'), join(dir, 'node_modules', 'fastify'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', '@opentelemetry'), join(dir, 'node_modules', '@opentelemetry'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir');
  writeFileSync(join(dir, 'examples.d.ts'), EXAMPLES_DTS);
  writeFileSync(join(dir, 'package.json'), '{ "name": "readme-examples", "private": true, "type": "module" }\n');
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('every ```ts block of the README compiles under --strict against the built package', () => {
  const found = blocks();
  assert.ok(found.length >= 5, `found ${found.length} blocks`);
  const files = found.map((b) => {
    const name = /^\/\/ (\w+)\.ts\n/.exec(b.code)?.[1] ?? `readme-line-${b.line}`;
    writeFileSync(join(dir, `${name}.ts`), b.code);
    return `${name}.ts`;
  });
  assert.ok(files.includes('jobs.ts'), 'a block is the jobs module (`// jobs.ts`)');
  const config = {
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', moduleDetection: 'force', types: ['node'], skipLibCheck: true },
    files: ['examples.d.ts', ...files],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config, null, 2));
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    // readme-line-N.ts is the block that starts on line N of README.md.
    assert.fail(`README examples do not compile:\n${(err as { stdout?: string }).stdout ?? String(err)}`);
  }
});

/** Compiles `code` as a module of the examples' project; the compiler's output, '' when it compiles. */
function compile(name: string, code: string): string {
  writeFileSync(join(dir, `${name}.ts`), code);
  const config = { compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], skipLibCheck: true }, files: ['examples.d.ts', `${name}.ts`] };
  writeFileSync(join(dir, `tsconfig.${name}.json`), JSON.stringify(config, null, 2));
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', `tsconfig.${name}.json`], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return '';
  } catch (err) {
    return (err as { stdout?: string }).stdout ?? String(err);
  }
}

test('runner.add takes a plain job declared before it is added; a wrong scope is still an error', () => {
  const accepted = compile('plain-jobs', [
    "import { createRunner, defineJob } from 'leasehold';",
    'const runner = createRunner({});',
    "runner.add(defineJob({ id: 'typed', scope: 'installation', cron: '0 */5 * * * *', async run(ctx) { await purge([], ctx.fencingToken); } }));",
    "const nightly = { id: 'nightly', scope: 'installation', cron: '0 0 3 * * *', run: cleanup };",
    'runner.add(nightly);',
    "const jobs = [nightly, { id: 'refresh', fixedRate: '30s', run: async () => refreshLocalCache() }];",
    'for (const job of jobs) runner.add(job);',
    "runner.add({ id: 'inline', scope: 'installation', fixedRate: '1m', async run(ctx) { await purge([], ctx.fencingToken); } });",
    '',
  ].join('\n'));
  assert.equal(accepted, '');
  const refused = compile('bad-scope', [
    "import { createRunner } from 'leasehold';",
    "createRunner({}).add({ id: 'typo', scope: 'instalation', cron: '0 0 3 * * *', run: cleanup });",
    "createRunner({}).add({ id: 'unknown', fixedRate: '1s', retries: 3, run: cleanup });",
    '',
  ].join('\n'));
  assert.match(refused, /bad-scope\.ts\(2,\d+\): error TS2769: No overload matches this call\.\n(?:\s+.*\n)*?\s+Type '"instalation"' is not assignable to type 'JobScope \| undefined'\. Did you mean '"installation"'\?/);
  assert.match(refused, /bad-scope\.ts\(3,\d+\): error TS2769: No overload matches this call\.\n(?:\s+.*\n)*?\s+Object literal may only specify known properties, and 'retries' does not exist/);
});
