/**
 * `require('leasehold')`, for CommonJS code: the ES module itself, which Node 20.19+ can
 * `require()` (it has no top-level await). Under the `leasehold` command, whose loader for a
 * `.ts` jobs module in a project without `"type": "module"` compiles the module to CommonJS
 * and would evaluate a second copy of leasehold for it (tsx transforms an ES module that is
 * `require()`d instead of loading it), this is the instance the command runs, which its
 * entry (`bin/leasehold.js`) shares under {@link SHARED_KEY}: one `LeaseholdError` class,
 * one set of checks.
 * @module
 */
import type * as Leasehold from './index.js' with { 'resolution-mode': 'import' };

/** The key under which the `leasehold` command shares the instance it runs. */
const SHARED_KEY = Symbol.for('leasehold.api');

const shared = (globalThis as { [SHARED_KEY]?: typeof Leasehold })[SHARED_KEY];
// eslint-disable-next-line @typescript-eslint/no-require-imports -- require(esm) is the point of this file
export = shared ?? (require('./index.js') as typeof Leasehold);
