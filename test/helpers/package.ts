/**
 * The package as npm publishes it, installed into a throwaway project without the network:
 * `npm pack` of this repository unpacked into the project's node_modules, and leasehold's
 * dependencies linked from this repository's install. `npm run build` first.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, symlinkSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { ROOT } from './node.js';

/** This repository's package.json, as far as the tests read it. */
export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly dependencies: Record<string, string>;
  readonly devDependencies: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** This repository's package.json. */
export const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** Runs npm quietly (no update notice, funding or audit); its stdout. */
export function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Where a package (or a scope's folder) is found by Node from `from` (a directory): the nearest node_modules up from it holding it. */
export function resolvePackage(name: string, from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${name} is not installed where ${from} would find it`);
  }
}

/** Where this repository's dist/ finds a package. */
export function installed(name: string): string {
  return resolvePackage(name, join(ROOT, 'dist'));
}

/** Links `target` into `modules` under `name` (a scoped name gets its scope folder). */
function link(modules: string, name: string, target: string): void {
  const at = join(modules, name);
  mkdirSync(dirname(at), { recursive: true });
  symlinkSync(target, at, 'dir');
}

/**
 * Packs this repository into `work` and makes `work/project`: a project whose node_modules
 * holds the unpacked tarball as `leasehold`, its dependencies linked from this repository,
 * and `@types/node`. Returns the tarball's file name and the project's directory.
 */
export function packedProject(work: string): { tarball: string; project: string } {
  const tarball = npm(['pack', '--ignore-scripts', '--pack-destination', work], ROOT).trim().split('\n').at(-1) ?? '';
  const project = join(work, 'project');
  const modules = join(project, 'node_modules');
  mkdirSync(modules, { recursive: true });
  execFileSync('tar', ['-xzf', join(work, tarball), '-C', modules]);
  renameSync(join(modules, 'package'), join(modules, 'leasehold'));
  for (const dep of Object.keys(pkg.dependencies)) link(modules, dep, installed(dep));
  link(modules, '@types/node', installed('@types/node'));
  return { tarball, project };
}

interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/**
 * Copies the installed package at `from` (with its own nested node_modules) into the project's
 * node_modules as `name`, as npm would install it there: `npm:` aliases of this repository
 * (`@nestjs/common-v11`) become the package they stand for. What the copy needs from outside
 * itself (its dependencies and required peers, found from where it is installed here) is
 * linked into the project's node_modules, except `provided`: names the project holds itself.
 * A name wanted at two different installs throws.
 */
export function copyPackage(project: string, name: string, from: string, provided: readonly string[] = []): void {
  const modules = join(project, 'node_modules');
  const to = join(modules, name);
  mkdirSync(dirname(to), { recursive: true });
  cpSync(from, to, { recursive: true, dereference: false });
  const seen = new Set<string>();
  const visit = (dir: string): void => {
    if (seen.has(dir)) return;
    seen.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
    const optional = manifest.peerDependenciesMeta ?? {};
    const peers = Object.keys(manifest.peerDependencies ?? {}).filter((p) => optional[p]?.optional !== true);
    const wanted = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {}), ...peers];
    for (const dep of wanted) {
      if (provided.includes(dep)) continue;
      let found: string;
      try {
        found = resolvePackage(dep, dir);
      } catch (err) {
        if (manifest.optionalDependencies?.[dep] !== undefined) continue;
        throw err;
      }
      if (found.startsWith(from + sep)) {
        visit(found); // copied with the package: its own needs are linked in turn
        continue;
      }
      const target = realpathSync(found);
      const at = join(modules, dep);
      if (existsSync(at)) {
        if (realpathSync(at) !== target) throw new Error(`${relative(from, dir) || name} wants ${dep} at ${target}, the project has ${realpathSync(at)}`);
        continue;
      }
      link(modules, dep, target);
    }
  };
  visit(from);
}
