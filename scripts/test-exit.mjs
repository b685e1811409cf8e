// Loaded into every test file's process by scripts/test.mjs (NODE_OPTIONS --import), and so into
// every node process a test starts (they inherit NODE_OPTIONS, not the mark).
//
// In the test file's process (the one scripts/test.mjs marked): a file whose process is still
// held open LINGER_MS after its tests ended says which handles hold it, and ends with the exit
// code its tests set. Its reports were written long before, so none is lost (an exit right at
// the end, as --test-force-exit does, loses some).
//
// In a process a test started: when its parent is gone (the test file's process was killed from
// outside, so its `after` hooks never ran), it is sent SIGTERM, and ended ORPHAN_GRACE_MS later if
// it is still there. A node or a Nest application left behind would otherwise run on for hours.
import { clearInterval, setInterval } from 'node:timers';

const LINGER_MS = 30_000;
const ORPHAN_CHECK_MS = 1_000;
const ORPHAN_GRACE_MS = 10_000;

if (process.env.LEASEHOLD_TEST_FILE === '1') {
  delete process.env.LEASEHOLD_TEST_FILE;
  process.env.LEASEHOLD_TEST_CHILD = '1';
  const { after } = await import('node:test');
  after(() => {
    setTimeout(() => {
      const held = process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap');
      process.stderr.write(`${process.argv[1] ?? 'a test file'}: still held open ${LINGER_MS / 1000} s after its tests ended (${held.join(', ') || 'no handle listed'}); ending it\n`);
      process.exit();
    }, LINGER_MS).unref();
  });
} else if (process.env.LEASEHOLD_TEST_CHILD === '1' && (await import('node:worker_threads')).isMainThread) {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
    setTimeout(() => process.exit(1), ORPHAN_GRACE_MS).unref();
  }, ORPHAN_CHECK_MS);
  watch.unref();
}
