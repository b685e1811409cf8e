/**
 * The jobs module of the leasehold nodes in S4 (`leasehold start --jobs`): `BENCH_JOBS`
 * installation jobs on `BENCH_CRON`, each the shared body without the recording.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BODY_MS, jobId } from '../protocol.js';

const count = Number(process.env['BENCH_JOBS'] ?? '1000');
const cron = process.env['BENCH_CRON'] ?? '*/10 * * * * *';

export default Array.from({ length: count }, (_, i) => ({
  id: jobId(i),
  scope: 'installation',
  cron,
  run: () => sleep(BODY_MS),
}));
