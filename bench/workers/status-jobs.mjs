/**
 * The jobs module of the leasehold nodes in S4 (`leasehold start --jobs`): `BENCH_JOBS`
 * installation jobs on `BENCH_CRON`, each the shared body (a sleep of `BENCH_BODY_MS`)
 * without the recording. Plain JavaScript, as a node runs in production: a TypeScript jobs
 * module is loaded through tsx, whose loader thread adds about 27 MB of RSS of its own.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';

const count = Number(process.env['BENCH_JOBS'] ?? '1000');
const cron = process.env['BENCH_CRON'] ?? '*/10 * * * * *';
const bodyMs = Number(process.env['BENCH_BODY_MS'] ?? '20');

export default Array.from({ length: count }, (_, i) => ({
  // The ids every worker uses (bench/protocol.ts jobId).
  id: `job-${String(i).padStart(5, '0')}`,
  scope: 'installation',
  cron,
  run: () => sleep(bodyMs),
}));
