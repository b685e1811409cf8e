#!/usr/bin/env node
// The leasehold command. The compiled code lives in dist/ (built by `npm ci` / `npm run build`).
import { main } from '../dist/cli/main.js';

const command = process.argv[2];
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // One-shot commands are done once they have printed: a Redis client's reconnect timer
    // (status with Redis away) must not hold the process. A node exits when it has stopped.
    if (command !== 'start') process.exit(code);
  },
  (err) => {
    process.stderr.write(`leasehold: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
