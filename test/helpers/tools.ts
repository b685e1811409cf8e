/**
 * Tests that need an outside tool (promtool, libfaketime): on a developer's machine without
 * the tool they skip, saying which package brings it; under CI (`CI` set, as .ci/run does),
 * which installs every tool, a missing tool fails the test instead of skipping it.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

/** Whether the tests run under CI: `CI` set to anything but empty, `0` or `false`. */
export const IN_CI = !['', '0', 'false'].includes((process.env['CI'] ?? '').toLowerCase());

/**
 * True when the tool is `present`; otherwise skips the test with `missing` as the reason and
 * answers false, or under CI fails the test with it.
 */
export function haveTool(t: TestContext, present: boolean, missing: string): boolean {
  if (present) return true;
  assert.ok(!IN_CI, `${missing}, and CI must have it`);
  t.skip(missing);
  return false;
}
