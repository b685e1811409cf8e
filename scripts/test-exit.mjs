// Loaded into every test file's process by scripts/test.mjs (NODE_OPTIONS --import): a file
// whose process is still held open LINGER_MS after its tests ended says which handles hold it,
// and ends with the exit code its tests set. Its reports were written long before, so none is
// lost (an exit right at the end, as --test-force-exit does, loses some). Only the process that
// scripts/test.mjs marked acts (and loads node:test): the processes a test starts inherit
// NODE_OPTIONS, not the mark.
const LINGER_MS = 30_000;

if (process.env.LEASEHOLD_TEST_FILE === '1') {
  delete process.env.LEASEHOLD_TEST_FILE;
  const { after } = await import('node:test');
  after(() => {
    setTimeout(() => {
      const held = process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap');
      process.stderr.write(`${process.argv[1] ?? 'a test file'}: still held open ${LINGER_MS / 1000} s after its tests ended (${held.join(', ') || 'no handle listed'}); ending it\n`);
      process.exit();
    }, LINGER_MS).unref();
  });
}
