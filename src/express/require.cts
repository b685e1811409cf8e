/**
 * `require('leasehold/express')`, for CommonJS code: the ES module itself,
 * which Node 20.19+ can `require()` (it has no top-level await).
 * @module
 */
import type * as Express from './index.js' with { 'resolution-mode': 'import' };

// eslint-disable-next-line @typescript-eslint/no-require-imports -- require(esm) is the point of this file
export = require('./index.js') as typeof Express;
