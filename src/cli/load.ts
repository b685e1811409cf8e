/**
 * Loads a jobs module (`.js`, `.mjs`, `.ts`): its default export must be an array of jobs (and
 * instances with `@Scheduled` methods).
 * @module
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve, extname, relative, isAbsolute } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { ErrorCodes, LeaseholdError, errorMessage } from '../errors.js';
import { OPTIONAL_PEERS, typeScriptLoader } from '../peer.js';
import { isDecorated } from '../decorators/naming.js';
import { deferringChecks } from '../schedule/deferred.js';

const TS_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.tsx']);
const JS_EXTENSIONS = new Set(['.js', '.mjs', '.cjs']);
/** How long `node --check` may take to find where a syntax error is, ms. */
const CHECK_TIMEOUT_MS = 10_000;
/** The longest source line shown under an error; a longer one is cut around the column. */
const MAX_SHOWN_LINE = 120;

/** Where a module failed to compile. */
interface SourceLocation {
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based; unknown at the end of the input. */
  readonly column: number | undefined;
  readonly message: string;
  readonly lineText?: string | undefined;
}

/**
 * Imports the module at `path` (relative to the working directory) and returns its default export:
 * an array of jobs and instances with `@Scheduled` methods, or one such instance (as an array).
 * @throws LeaseholdError `invalidModule` when it is missing, fails to load, or exports neither;
 * a syntax error names the file, line and column and shows the line.
 */
export async function loadJobsModule(path: string): Promise<unknown[]> {
  const file = resolve(path);
  if (!existsSync(file)) throw new LeaseholdError(ErrorCodes.invalidModule, `jobs module ${path}: no such file`);
  let mod: { default?: unknown };
  const typeScript = TS_EXTENSIONS.has(extname(file));
  if (typeScript) await registerTypeScript();
  try {
    // Every definition is checked once loaded, so that each wrong one is named, not only the first.
    mod = (await deferringChecks(() => import(pathToFileURL(file).href))) as { default?: unknown };
  } catch (err) {
    const where = await locate(err, file);
    const thrownAt = where ? undefined : throwingFrame(err);
    const msg = where ? describeLocation(where) : `${errorMessage(err).split('\n')[0] ?? ''}${thrownAt ? ` (at ${thrownAt})` : ''}`;
    const hint = typeScript && typeScriptLoader() === 'node' && err instanceof Error && (err.name === 'SyntaxError' || (err as NodeJS.ErrnoException).code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') ? `; Node strips types only, decorators, enums and parameter properties need tsx: npm install tsx@${OPTIONAL_PEERS.tsx}` : '';
    throw new LeaseholdError(ErrorCodes.invalidModule, `jobs module ${path} failed to load: ${msg}${hint}`, { cause: err });
  }
  // tsx may wrap a CommonJS-style default once more.
  let exported = mod.default;
  if (!Array.isArray(exported) && exported && typeof exported === 'object' && 'default' in exported) {
    exported = (exported as { default: unknown }).default;
  }
  if (isDecorated(exported)) return [exported];
  if (!Array.isArray(exported)) {
    throw new LeaseholdError(ErrorCodes.invalidModule, `jobs module ${path}: its default export must be an array of jobs, got ${exported === undefined ? 'nothing' : typeof exported}`);
  }
  return exported;
}

/** What a jobs module exports beside its jobs: `executors` (by name) and `tasks` (an array). */
export interface ModuleExtras {
  readonly executors: unknown;
  readonly tasks: unknown[];
  /** The module's URL, which worker threads load. */
  readonly url: string;
}

/**
 * The executors and tasks a jobs module exports beside its jobs (after {@link loadJobsModule},
 * which loaded it: the module is not evaluated again).
 * @throws LeaseholdError `invalidModule` when `tasks` is not an array.
 */
export async function loadModuleExtras(path: string): Promise<ModuleExtras> {
  const url = pathToFileURL(resolve(path)).href;
  let mod = (await import(url)) as Record<string, unknown>;
  // A CommonJS module compiled by tsx: its exports under `default`.
  if (!('tasks' in mod) && !('executors' in mod) && typeof mod['default'] === 'object' && mod['default'] !== null && !Array.isArray(mod['default'])) mod = mod['default'] as Record<string, unknown>;
  const tasks = mod['tasks'] ?? [];
  if (!Array.isArray(tasks)) throw new LeaseholdError(ErrorCodes.invalidModule, `jobs module ${path}: its export "tasks" must be an array of tasks, got ${typeof tasks}`);
  return { executors: mod['executors'], tasks, url };
}

let typeScriptRegistered = false;

/**
 * Lets this process load TypeScript, for `import` and `require()` alike (tsx's hooks, for the
 * whole process: the jobs module is its reason to be; Node's own type stripping when tsx, an
 * optional peer, is not installed). A `.ts` file in a project without
 * `"type": "module"` is compiled to CommonJS, so its `import ... from 'leasehold'` is a
 * `require()`: it gets the instance this process runs (see `src/require.cts`), and a package
 * that leasehold has loaded already (ioredis) is not evaluated a second time.
 */
async function registerTypeScript(): Promise<void> {
  if (typeScriptRegistered) return;
  // Without tsx, on a Node that strips types, the module is imported as it is.
  if (typeScriptLoader() === 'node') return;
  const [esm, cjs] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]);
  esm.register();
  cjs.register();
  typeScriptRegistered = true;
}

/**
 * Where a module failed to compile, from what the error carries: esbuild's `errors[].location`
 * (a `.ts` module through tsx, or the same in its message when it crossed tsx's loader thread),
 * the `file:line` header Node puts on a CommonJS syntax error's stack, or else, for a syntax
 * error in a JavaScript module (Node 20 gives an ES module's none), `node --check` on the file.
 */
async function locate(err: unknown, file: string): Promise<SourceLocation | undefined> {
  if (!(err instanceof Error)) return undefined;
  const fromEsbuild = esbuildLocation(err);
  if (fromEsbuild) return fromEsbuild;
  const fromStack = decoratedStackLocation(err.stack ?? '', `${err.name}: ${err.message}`);
  if (fromStack) return fromStack;
  if (err.name === 'SyntaxError' && JS_EXTENSIONS.has(extname(file))) {
    const checked = await checkSyntax(file);
    // A syntax error in a module it imports: `--check` parses this one file only, and passes.
    if (checked) return checked;
  }
  return undefined;
}

/** esbuild's `{ errors: [{ text, location: { file, line, column, lineText } }] }`, or its message. */
function esbuildLocation(err: Error): SourceLocation | undefined {
  const errors: unknown = (err as { errors?: unknown }).errors;
  const first: unknown = Array.isArray(errors) ? errors[0] : undefined;
  if (typeof first === 'object' && first !== null && 'location' in first && 'text' in first) {
    const loc: unknown = first.location;
    if (typeof loc === 'object' && loc !== null && 'file' in loc && 'line' in loc && 'column' in loc) {
      const { file, line, column } = loc;
      if (typeof file === 'string' && typeof line === 'number' && typeof column === 'number') {
        const lineText = 'lineText' in loc && typeof loc.lineText === 'string' ? loc.lineText : undefined;
        return { file, line, column: column + 1, message: String(first.text), lineText };
      }
    }
  }
  // "Transform failed with 1 error:\n/abs/jobs.ts:3:48: ERROR: Unexpected "}"" (esbuild's columns are 0-based).
  const m = /^(.+?):(\d+):(\d+): ERROR: (.*)$/m.exec(err.message);
  if (m === null || !/^Transform failed with \d+ errors?:/.test(err.message)) return undefined;
  const more = (err.message.match(/: ERROR: /g) ?? []).length - 1;
  return { file: m[1] ?? '', line: Number(m[2]), column: Number(m[3]) + 1, message: `${m[4] ?? ''}${more > 0 ? ` (and ${more} more error${more === 1 ? '' : 's'})` : ''}` };
}

/** Node's `file:line\n<source line>\n   ^\n\nSyntaxError: ...` header of a syntax error's stack. */
function decoratedStackLocation(text: string, fallbackMessage: string): SourceLocation | undefined {
  const m = /^(.+):(\d+)\n(.*)\n( *)(\^*) *\n(?:\n(\w*Error: .*))?/.exec(text);
  if (m === null) return undefined;
  const file = m[1] ?? '';
  return {
    file: file.startsWith('file://') ? fileURLToPath(file) : file,
    line: Number(m[2]),
    column: m[5] ? (m[4] ?? '').length + 1 : undefined,
    message: (m[6] ?? fallbackMessage).replace(/^SyntaxError: /, ''),
    lineText: m[3],
  };
}

/** A path as the user would type it: relative to the working directory when inside it. */
function shown(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? file : rel;
}

/** leasehold's own code, whose frames are not where a jobs module went wrong. */
const OWN_CODE = [fileURLToPath(new URL('../', import.meta.url)), fileURLToPath(new URL('../../src/', import.meta.url))];

/**
 * Where an error thrown while the module ran came from: the first frame of its stack in the
 * user's code (not Node's, a dependency's or leasehold's), as `jobs.mjs:4:7`.
 */
function throwingFrame(err: unknown): string | undefined {
  if (!(err instanceof Error) || typeof err.stack !== 'string') return undefined;
  for (const m of err.stack.matchAll(/^\s+at (?:.*\()?((?:file:\/\/)?\/[^\s()]+?):(\d+):(\d+)\)?$/gm)) {
    const file = m[1]?.startsWith('file://') ? fileURLToPath(m[1]) : (m[1] ?? '');
    if (file.includes('/node_modules/') || OWN_CODE.some((dir) => file.startsWith(dir))) continue;
    return `${shown(file)}:${m[2] ?? ''}:${m[3] ?? ''}`;
  }
  return undefined;
}

/** Runs `node --check` on a JavaScript file and reads where V8 found the syntax error. */
async function checkSyntax(file: string): Promise<SourceLocation | undefined> {
  try {
    await promisify(execFile)(process.execPath, ['--check', file], { timeout: CHECK_TIMEOUT_MS, env: { ...process.env, NODE_OPTIONS: '' } });
    return undefined;
  } catch (err) {
    const stderr: unknown = typeof err === 'object' && err !== null && 'stderr' in err ? err.stderr : undefined;
    return typeof stderr === 'string' ? decoratedStackLocation(stderr, 'syntax error') : undefined;
  }
}

/** `jobs.ts:3:49: Unexpected "}"`, then the line and a caret under the column. */
function describeLocation(loc: SourceLocation): string {
  const shownFile = isAbsolute(loc.file) ? shown(loc.file) : loc.file;
  let text = loc.lineText;
  if (text === undefined) {
    try {
      text = readFileSync(loc.file, 'utf8').split(/\r?\n/)[loc.line - 1];
    } catch (err) {
      // The location stands without the line.
      text = `(cannot read the line: ${errorMessage(err)})`;
    }
  }
  const head = `${shownFile}:${loc.line}${loc.column === undefined ? '' : `:${loc.column}`}: ${loc.message}`;
  if (text === undefined || loc.column === undefined) return text ? `${head}\n  ${loc.line} | ${text}` : head;
  let col = loc.column - 1;
  if (text.length > MAX_SHOWN_LINE) {
    const start = Math.max(0, Math.min(col - MAX_SHOWN_LINE / 2, text.length - MAX_SHOWN_LINE));
    text = `${start > 0 ? '…' : ''}${text.slice(start, start + MAX_SHOWN_LINE)}${start + MAX_SHOWN_LINE < text.length ? '…' : ''}`;
    col = col - start + (start > 0 ? 1 : 0);
  }
  const gutter = String(loc.line);
  const pad = text.slice(0, Math.max(0, col)).replace(/[^\t]/g, ' ');
  return `${head}\n  ${gutter} | ${text}\n  ${' '.repeat(gutter.length)} | ${pad}^`;
}
