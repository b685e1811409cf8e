#!/usr/bin/env node
// The leasehold command. The compiled code lives in dist/ (built by `npm ci` / `npm run build`).
import * as leasehold from '../dist/index.js';
import { main, writeOut } from '../dist/cli/main.js';

// A jobs module that require()s leasehold (a .ts one in a project without "type": "module" is
// compiled to CommonJS) gets this instance, the one the command runs (see dist/require.cjs).
globalThis[Symbol.for('leasehold.api')] = leasehold;

const command = process.argv[2];
main(process.argv.slice(2))
  .catch(async (err) => {
    await writeOut(process.stderr, `leasehold: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  })
  .then((code) => {
    process.exitCode = code;
    // main resolves once what it printed is written, however slowly a pipe is read, so a
    // one-shot command exits now: a Redis client's reconnect timer (status with Redis away)
    // must not hold the process. A node exits by itself when it has stopped.
    if (command !== 'start') process.exit(code);
  });
