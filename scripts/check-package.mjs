// The package as npm would publish it, checked by the ecosystem's tools: publint (package.json's
// entry points, files and formats) and arethetypeswrong (the types each consumer gets: ES
// modules and CommonJS under node16/nodenext, bundler and node10 resolution). Part of
// `npm run check`.
//
// Both read a packed tarball, which needs dist/. To keep `npm run check` quick, dist/ is built
// only when it is missing or older than what it is built from (src/, the build scripts, the
// build's tsconfig); packing and both checks then take a few seconds.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDist, pack, root } from './pack.mjs';

const bin = (name) => join(root, 'node_modules', '.bin', name);

ensureDist('check-package');
const dir = mkdtempSync(join(tmpdir(), 'leasehold-check-package-'));
let failed = false;
try {
  const tarball = pack(dir);
  for (const [tool, args] of [['publint', ['--strict', tarball]], ['attw', [tarball, '--format', 'table']]]) {
    try {
      execFileSync(bin(tool), args, { cwd: root, stdio: 'inherit' });
    } catch (err) {
      // A tool that ran and found problems has printed them: go on to the other one, then fail.
      if (typeof err?.status !== 'number') throw err;
      failed = true;
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (failed) {
  console.error('check-package: the packed package has problems (above)');
  process.exit(1);
}
