// The package as npm publishes it, for the scripts that look at it from outside
// (check-package.mjs, install-size.mjs): dist/ built when it is missing or older than what it
// is built from, then packed into a tarball.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));

/** The newest modification time under `path` (a file or a folder), in ms. */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((max, entry) => Math.max(max, newest(join(path, entry))), 0);
}

/** Runs `npm run build` unless dist/ is newer than src/, the build scripts and the build's tsconfig. */
export function ensureDist(who) {
  const built = join(root, 'dist', 'require.d.cts'); // written after tsc by the build
  const inputs = ['src', 'scripts/copy-assets.mjs', 'scripts/build-ui.mjs', 'scripts/require-types.mjs', 'tsconfig.build.json', 'tsconfig.json'];
  if (existsSync(built) && inputs.every((p) => newest(join(root, p)) <= statSync(built).mtimeMs)) return;
  console.log(`${who}: dist/ is missing or older than src/: npm run build`);
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
}

/** Packs the package into `dir` (build scripts skipped: dist/ is already built); the tarball's path. */
export function pack(dir) {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
  return join(dir, packed.filename);
}
