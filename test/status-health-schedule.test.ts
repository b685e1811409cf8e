/**
 * SPEC 5, health: a job is degraded when three scheduled fires have passed since its last
 * success (or its registration, resume or schedule change), counted on its real schedule. An
 * office-hours cron (`0 0 9-17 * * MON-FRI`, Spring's own javadoc example) is not stale at night
 * or over the weekend; a weekly one is judged by its weeks.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { degradedReasons, successDeadline, NO_SUCCESS_SLACK_MS } from '../src/status/health.js';
import { cronTrigger } from '../src/schedule/trigger.js';

const iso = (ms: number): string => new Date(ms).toISOString();
const ctx = (nowMs: number) => ({ nowMs, live: new Set<string>(), failingStreak: 3 });
const HOUR = 3_600_000;

/** The stats a job's hash holds after a success ending at `successAt`. */
function stats(cron: string, zone: string, successAt: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    scope: 'installation', scheduleKind: 'cron', schedule: cron, zone, intervalMs: String(HOUR),
    createdAt: iso(successAt - 30 * 86_400_000), lastSuccessAt: iso(successAt), lastDurationMs: '1000', streak: '0', ...extra,
  };
}

describe('health on a job\'s real schedule', () => {
  it('an office-hours cron that succeeds at each fire is never degraded through a whole week, nights and the weekend included', () => {
    const cron = '0 0 9-17 * * MON-FRI';
    const next = cronTrigger(cron, 'Europe/Berlin').next;
    const start = Date.parse('2026-11-30T00:00:00Z'); // a Monday
    let lastSuccess = start - 3 * 86_400_000; // the Friday before, after its last fire
    let fire = next(lastSuccess) as number;
    for (let t = start; t < start + 8 * 86_400_000; t += 5 * 60_000) {
      while (fire + 1_000 <= t) {
        lastSuccess = fire + 1_000; // each run succeeds and lasts a second
        fire = next(fire) as number;
      }
      assert.deepEqual(degradedReasons(stats(cron, 'Europe/Berlin', lastSuccess), ctx(t)), [], `degraded at ${iso(t)}`);
    }
  });

  it('stops succeeding on Friday at 17:00: ok all weekend, degraded once the third fire on Monday (11:00) has passed', () => {
    const cron = '0 0 9-17 * * MON-FRI';
    const friday = Date.parse('2026-12-04T17:00:01Z'); // UTC zone: the last fire of the week
    const s = stats(cron, 'UTC', friday);
    assert.deepEqual(degradedReasons(s, ctx(Date.parse('2026-12-05T12:00:00Z'))), [], 'Saturday');
    assert.deepEqual(degradedReasons(s, ctx(Date.parse('2026-12-07T10:30:00Z'))), [], 'Monday 10:30: two fires passed');
    const deadline = Date.parse('2026-12-07T11:00:00Z') + 1_000 + NO_SUCCESS_SLACK_MS;
    assert.equal(successDeadline(s), deadline);
    assert.deepEqual(degradedReasons(s, ctx(deadline)), [], 'at the deadline');
    const reasons = degradedReasons(s, ctx(deadline + 1));
    assert.equal(reasons.length, 1);
    assert.match(reasons[0] ?? '', /no successful run for .*3 scheduled fires have passed/);
  });

  it('a weekly cron (0 30 9,17 * * MON) is judged by its fires, not by the 8 hours between two of them', () => {
    const cron = '0 30 9,17 * * MON';
    const monday = Date.parse('2026-11-30T09:30:01Z');
    const s = stats(cron, 'UTC', monday);
    // Fires after: Mon 17:30, next Mon 09:30, next Mon 17:30.
    assert.deepEqual(degradedReasons(s, ctx(monday + 3 * 8 * HOUR)), [], 'a day later');
    assert.deepEqual(degradedReasons(s, ctx(Date.parse('2026-12-07T12:00:00Z'))), [], 'a week later, two fires passed');
    assert.equal(degradedReasons(s, ctx(Date.parse('2026-12-07T17:30:00Z') + 1_000 + NO_SUCCESS_SLACK_MS + 1)).length, 1);
  });

  it('counts from a resume or a schedule change, and from the job\'s zone', () => {
    const cron = '0 0 9 * * *';
    const old = Date.parse('2026-11-01T09:00:01Z');
    const resumed = Date.parse('2026-11-30T12:00:00Z');
    const s = stats(cron, 'America/New_York', old, { resumedAt: iso(resumed) });
    // 09:00 in New York is 14:00 UTC: fires Nov 30 14:00, Dec 1 14:00, Dec 2 14:00.
    assert.equal(successDeadline(s), Date.parse('2026-12-02T14:00:00Z') + 1_000 + NO_SUCCESS_SLACK_MS);
  });

  it('fixedRate and fixedDelay: three periods; a schedule that does not parse gives no deadline', () => {
    const at = Date.parse('2026-12-01T00:00:00Z');
    const fixed = { scheduleKind: 'fixedRate', schedule: '10s', intervalMs: '10000', lastSuccessAt: iso(at), lastDurationMs: '0' };
    assert.equal(successDeadline(fixed), at + 30_000 + NO_SUCCESS_SLACK_MS);
    assert.equal(successDeadline({ ...fixed, scheduleKind: 'cron', schedule: 'not a cron' }), null);
  });
});

describe('the success deadline in Prometheus', () => {
  it('GET /metrics exports leasehold_job_success_deadline_timestamp_seconds as the status judges it', async () => {
    const { startRedis } = await import('./helpers/redis.js');
    const { createNode } = await import('../src/create/index.js');
    const { memoryLogger } = await import('./helpers/log.js');
    const Fastify = (await import('fastify')).default;
    const server = await startRedis();
    const { logger } = memoryLogger();
    const layer = createNode({ instanceId: 'n', logger, shutdownGraceMs: 100, redis: { url: server.url }, prefix: 'deadline' });
    const core = layer.core;
    core.add({ id: 'office', cron: '0 0 9-17 * * MON-FRI', run: () => undefined });
    await layer.start();
    core.start();
    await layer.flush();
    const app = Fastify();
    await app.register(layer.routes);
    try {
      const job = (await app.inject({ method: 'GET', url: '/manage/jobs/office' })).json<{ successDueBy: string }>();
      assert.ok(job.successDueBy, 'the status has a deadline');
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      const m = /^leasehold_job_success_deadline_timestamp_seconds\{job="office"\} (\S+)$/m.exec(text);
      assert.ok(m, 'the gauge is exported');
      assert.equal(Number(m[1]) * 1000, Date.parse(job.successDueBy));
    } finally {
      await app.close();
      await core.stop();
      await layer.stop();
      await server.stop();
    }
  });
});
