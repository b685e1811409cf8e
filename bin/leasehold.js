#!/usr/bin/env node
// The leasehold command. The compiled code lives in dist/ (built by `npm ci` / `npm run build`).
import { main } from '../dist/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`leasehold: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
