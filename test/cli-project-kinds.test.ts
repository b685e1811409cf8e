/**
 * A `.ts` jobs module that imports `leasehold` by name loads in a project of either kind:
 * `"type": "module"`, none (npm's default: the module is compiled to CommonJS, so its import
 * is a `require()`), or `"type": "commonjs"`. `leasehold check` passes, and a short
 * `leasehold start` runs the jobs with the command's own leasehold instance (an abort reason
 * made by the node is a LeaseholdError to the jobs module). Runs the built CLI (`npm run build` first).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, runLeasehold, spawnLeasehold } from './helpers/node.js';

const JOBS = `import { defineJob, ErrorCodes, isLeaseholdError, type JobContext } from 'leasehold';
import Redis from 'ioredis';

export default [
  defineJob({
    id: 'waits-for-abort',
    fixedRate: '1s',
    timeout: '200ms',
    async run(ctx: JobContext) {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      ctx.log.info({ leaseholdError: isLeaseholdError(ctx.signal.reason, ErrorCodes.timeout), redisClient: typeof Redis }, 'aborted');
    },
  }),
  { id: 'plain', fixedDelay: '5s', run: async () => {} },
];
`;

const KINDS: Array<[string, Record<string, string>]> = [
  ['"type": "module"', { type: 'module' }],
  ['no "type" (npm\'s default)', {}],
  ['"type": "commonjs"', { type: 'commonjs' }],
];

let base: string;
before(() => {
  base = mkdtempSync(join(tmpdir(), 'leasehold-projects-'));
});
after(() => rmSync(base, { recursive: true, force: true }));

for (const [name, type] of KINDS) {
  describe(`a project with ${name}`, () => {
    let jobs: string;
    before(() => {
      const dir = mkdtempSync(join(base, 'project-'));
      writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, ...type }, null, 2)}\n`);
      mkdirSync(join(dir, 'node_modules'));
      // leasehold as a dependency (its exports map decides what `import` and `require` get),
      // and a package leasehold uses too.
      symlinkSync(ROOT, join(dir, 'node_modules', 'leasehold'), 'dir');
      symlinkSync(join(ROOT, 'node_modules', 'ioredis'), join(dir, 'node_modules', 'ioredis'), 'dir');
      jobs = join(dir, 'jobs.ts');
      writeFileSync(jobs, JOBS);
    });

    test('leasehold check loads jobs.ts', async () => {
      const r = await runLeasehold(['check', jobs]);
      assert.equal(r.stderr, '');
      assert.equal(r.stdout, `${jobs}: 2 jobs ok\n`);
      assert.equal(r.code, 0);
    });

    test('leasehold start runs its jobs with the same leasehold', { timeout: 30_000 }, async () => {
      const node = spawnLeasehold(['start', '--jobs', jobs, '--port', '0', '--host', '127.0.0.1'], { LOG_FORMAT: 'json' });
      try {
        await node.waitFor((l) => l['msg'] === 'leasehold runner started');
        const aborted = await node.waitFor((l) => l['msg'] === 'aborted');
        assert.equal(aborted['leaseholdError'], true, 'the abort reason is a LeaseholdError of the same class');
        assert.equal(aborted['redisClient'], 'function');
      } finally {
        node.kill('SIGTERM');
      }
      assert.equal((await node.exited).code, 0, node.stderr());
    });
  });
}
