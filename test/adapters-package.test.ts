/**
 * The framework adapters stay out of the core install: `@nestjs/common`, `@nestjs/core` and
 * `express` are optional peer dependencies, never dependencies, and the lockfile has no Nest
 * package that an install of leasehold alone (its production dependencies) would bring.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helpers/node.js';

interface Manifest {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  exports: Record<string, unknown>;
}
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };

test('Nest and Express are optional peers of leasehold/nestjs and leasehold/express, not dependencies', () => {
  for (const name of ['@nestjs/common', '@nestjs/core', 'express']) {
    assert.equal(pkg.dependencies[name], undefined, `${name} is no dependency`);
    assert.ok(pkg.peerDependencies[name], `${name} is a peer dependency`);
    assert.equal(pkg.peerDependenciesMeta[name]?.optional, true, `${name} is optional`);
  }
  assert.ok('./nestjs' in pkg.exports && './express' in pkg.exports);
});

test('an install of leasehold alone brings no Nest package', () => {
  const nest = Object.entries(lock.packages).filter(([path, entry]) => /(^|\/)node_modules\/@nestjs\//.test(path) && entry.dev !== true);
  assert.deepEqual(nest.map(([path]) => path), []);
});
