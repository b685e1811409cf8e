// The CPU-bound body of S6's 1 ms tasks and S7's heavy job, the same for leasehold and the peers.
import { performance } from 'node:perf_hooks';

/** Burns `ms` of CPU without yielding. */
export function burn(ms) {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x++;
  return x;
}
