// What `npm install` brings into a fresh project's node_modules: leasehold (this repository,
// packed as npm would publish it) beside what a team would install instead: bullmq (with
// ioredis, which it needs and does not bring), node-cron, and croner + redlock (with ioredis).
//
//   node scripts/install-size.mjs              the table
//   node scripts/install-size.mjs --top 15     and leasehold's 15 largest packages
//   node scripts/install-size.mjs --max-mb 25  exit 1 when leasehold's node_modules is larger
//
// Each subject is installed alone into a new temporary project from the npm registry (through
// npm's cache, so a second run is fast), with install scripts off: what counts is what lands
// on disk, not what a native build would add. "node_modules" is the sum of the files' sizes
// (what `du --apparent-size` says, the same on every file system), "on disk" the space they
// take with block rounding (what `du` says here); MB of 1,000,000 bytes. --max-mb applies to
// the first. docs/benchmarks.md has the figures.
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDist, pack } from './pack.mjs';

const { values: args } = parseArgs({ options: { top: { type: 'string', default: '0' }, 'max-mb': { type: 'string' } } });
const top = Number(args.top);
const maxMb = args['max-mb'] === undefined ? undefined : Number(args['max-mb']);
if (!Number.isInteger(top) || top < 0) throw new Error(`--top: "${args.top}" is not a whole number`);
if (maxMb !== undefined && !(maxMb > 0)) throw new Error(`--max-mb: "${args['max-mb']}" is not a positive number`);

/** The versions the comparison installs: the ones leasehold's benchmarks run against. */
const PEERS = {
  'bullmq + ioredis': ['bullmq@6.7.0', 'ioredis@5.11.1'],
  'node-cron': ['node-cron@4.6.0'],
  'croner + redlock + ioredis': ['croner@11.0.1', 'redlock@5.0.0-beta.2', 'ioredis@5.11.1'],
};

/** Total size in bytes of the files under `path` (symbolic links count as themselves). */
function size(path) {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + size(join(path, entry)), 0);
}

/** The disk space under `path` in bytes, folders and block rounding included (what `du` says). */
function disk(path) {
  const stat = lstatSync(path);
  const own = stat.blocks * 512;
  if (!stat.isDirectory()) return own;
  return readdirSync(path).reduce((sum, entry) => sum + disk(join(path, entry)), own);
}

/** Every installed package under a node_modules folder, nested ones included: name -> bytes of its own files. */
function packages(modules, out = new Map()) {
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    const names = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((n) => `${entry}/${n}`) : [entry];
    for (const name of names) {
      const dir = join(modules, name);
      const nested = join(dir, 'node_modules');
      let own = size(dir);
      try {
        own -= size(nested);
        packages(nested, out);
      } catch (err) {
        if (err.code !== 'ENOENT') throw err; // no nested node_modules: the common case
      }
      out.set(name, (out.get(name) ?? 0) + own);
    }
  }
  return out;
}

const mb = (bytes) => (bytes / 1e6).toFixed(1);

function install(label, specs, work) {
  const project = mkdtempSync(join(work, 'project-'));
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'install-size', version: '1.0.0', private: true }, null, 2)}\n`);
  execFileSync('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', ...specs], { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
  const modules = join(project, 'node_modules');
  const found = packages(modules);
  return { label, bytes: size(modules), disk: disk(modules), count: found.size, packages: found };
}

ensureDist('install-size');
const work = mkdtempSync(join(tmpdir(), 'leasehold-install-size-'));
try {
  const tarball = pack(work);
  const rows = [install('leasehold', [tarball], work), ...Object.entries(PEERS).map(([label, specs]) => install(label, specs, work))];
  const width = Math.max(...rows.map((r) => r.label.length));
  console.log(`${'installed'.padEnd(width)}  node_modules  on disk  packages`);
  for (const r of rows) console.log(`${r.label.padEnd(width)}  ${`${mb(r.bytes)} MB`.padStart(12)}  ${`${mb(r.disk)} MB`.padStart(7)}  ${String(r.count).padStart(8)}`);
  const leasehold = rows[0];
  if (top > 0) {
    console.log(`\nleasehold's ${top} largest packages:`);
    const largest = [...leasehold.packages].sort((a, b) => b[1] - a[1]).slice(0, top);
    for (const [name, bytes] of largest) console.log(`  ${`${mb(bytes)} MB`.padStart(8)}  ${name}`);
  }
  if (maxMb !== undefined && leasehold.bytes > maxMb * 1e6) {
    console.error(`install-size: leasehold's node_modules is ${mb(leasehold.bytes)} MB, over the ${maxMb} MB allowed`);
    process.exitCode = 1;
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
