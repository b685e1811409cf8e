/**
 * The lint keeps the layers of src/ (docs/architecture.md): fed through the repository's own
 * eslint.config.js, an import a layer may not make is reported naming the two modules, in
 * whatever folder the file sits and however the import is written, and an allowed one passes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('..', import.meta.url));
const eslint = new ESLint({ cwd: root, ruleFilter: ({ ruleId }) => ruleId === 'layers/imports' });

/** What the lint says of `code` as the file `filePath` (relative to the repository). */
async function lint(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  assert.ok(result, `no result for ${filePath}`);
  for (const m of result.messages) assert.equal(m.ruleId, 'layers/imports', `${filePath}: ${m.message}`);
  return result.messages.map((m) => m.message);
}

/** [file, code, importing module, imported module or package]. */
const forbidden: Array<[string, string, string, string]> = [
  ['src/runner/fire.ts', "import { leaseholdPlugin } from '../lease/../http/plugin.js';", 'runner', 'http'],
  ['src/http/ui/routes.ts', "import { jobKeys } from '../../redis/keys.js';", 'http', 'redis'],
  ['src/redis/scripts/helper.ts', "import type { JobStatus } from '../../status/model.js';", 'redis', 'status'],
  ['src/lease/lease.ts', "export async function load() { return import('../http/plugin.js'); }", 'lease', 'http'],
  ['src/runner/view.ts', "export type Seen = import('../status/model.js').ClusterStatus;", 'runner', 'status'],
  ['src/cron/parse.ts', 'import { jobKeys } from "../redis/keys.js";', 'cron', 'redis'],
  ['src/schedule/job.ts', "import '../runner/runner.js';", 'schedule', 'runner'],
  ['src/schedule/trigger.ts', 'import "../lease/port.js";', 'schedule', 'lease'],
  ['src/status/api.ts', "export { leaseholdPlugin } from '../http/plugin.js';", 'status', 'http'],
  ['src/metrics/prom.ts', "export * from '../status/model.js';", 'metrics', 'status'],
  ['src/create/index.ts', "import { main } from '../cli/main.js';", 'create', 'cli'],
  ['src/index.ts', "export { main } from './cli/main.js';", 'index', 'cli'],
  ['src/clock.ts', "import type { Logger } from './logger.js';", 'clock', 'logger'],
  ['src/config.ts', "import { parseDuration } from './schedule/duration.js';", 'config', 'schedule'],
  ['src/runner/claims.ts', "import { redisCoordinator } from '../lease/redis-coordinator.js';", 'runner', 'lease'],
  ['src/lease/watcher.ts', "const plugin = require('../http/plugin.js');", 'lease', 'http'],
  ['src/lease/batcher.ts', "import plugin = require('../http/plugin.js');", 'lease', 'http'],
  ['src/cli/main.ts', "import pkg from '../../package.json' with { type: 'json' };", 'cli', '../../package.json'],
  ['src/jobs/board.ts', "import { readStatus } from '../status/read.js';", 'jobs', 'status'],
  ['src/runner/run.ts', "import { Redis } from 'ioredis';", 'runner', 'ioredis'],
  ['src/cron/zone.ts', "export const load = () => import('ioredis');", 'cron', 'ioredis'],
  ['src/tasks/hooks.ts', "import { trace } from '@opentelemetry/api';", 'tasks', '@opentelemetry/api'],
];

for (const [file, code, from, to] of forbidden) {
  test(`${file}: ${code}`, async () => {
    const messages = await lint(file, code);
    assert.equal(messages.length, 1, `expected one report, got ${JSON.stringify(messages)}`);
    assert.match(messages[0] as string, new RegExp(`^${from} may not (import|use the package) (lease/)?${to.replaceAll('.', '\\.')}\\b`));
  });
}

const allowed: Array<[string, string]> = [
  ['src/http/ui/routes.ts', "import type { JobStatus } from '../../status/model.js';\nimport { problem } from '../problem.js';"],
  ['src/http/ui/client/types.ts', "export type Snapshot = import('../../../status/model.js').ClusterStatus;"],
  ['src/runner/claims.ts', 'import type { Coordinator } from "../lease/port.js";\nimport "../errors.js";\nexport const job = () => import(\'../schedule/job.js\');'],
  ['src/create/status.ts', "import { statusLayer } from '../status/index.js';\nimport { leaseholdPlugin } from '../http/plugin.js';"],
  ['src/clock.ts', "import { LeaseholdError } from './errors.js';"],
  ['src/redis/scripts/helper.ts', "import { jobKeys } from '../keys.js';\nimport { Redis } from 'ioredis';"],
  ['src/cli/main.ts', "export const load = (url: string) => import(url);"],
];

for (const [file, code] of allowed) {
  test(`${file} may: ${code.replaceAll('\n', ' ')}`, async () => {
    assert.deepEqual(await lint(file, code), []);
  });
}
