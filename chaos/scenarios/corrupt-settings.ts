/**
 * The settings hash `<prefix>:settings` turned into a string while 2 nodes run: a pause through
 * the HTTP API is answered with `corruptSettings` naming the key (not 503 "Redis is
 * unreachable"), `GET /manage/jobs` lists the problem and `/health` names it, each node says it
 * once at warn, and the jobs keep running on the settings last read. After `DEL`, a pause and a
 * resume apply again. Left out of `npm test`: `test/corrupt-keys.test.ts` and
 * `test/status-settings.test.ts` cover the fault there.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { getJson, pollJson, requestJson, type ChaosNode, type JsonReply } from '../cluster.js';
import { Checks } from '../report.js';
import { readRunLog, startsOf, waitForLog } from '../runlog.js';
import { compareCounts, duplicates, missedCount, stage, stopGracefully, tickCoverage, type Scenario } from '../scenario.js';

const TOKEN = 'chaos-settings-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** The problems `GET /manage/jobs` lists. */
function problemsOf(reply: JsonReply): Array<Record<string, unknown>> {
  return isObject(reply.body) && Array.isArray(reply.body['problems']) ? reply.body['problems'].filter(isObject) : [];
}

function admin(node: ChaosNode, action: 'pause' | 'resume'): Promise<JsonReply> {
  return requestJson(node, `/manage/jobs/tick/${action}`, { method: 'POST', headers: AUTH });
}

export const corruptSettings: Scenario = {
  name: 'settings hash corrupted',
  long: true,
  faults: (quick) => `SET of the settings hash to a string for ${quick ? 4 : 8} s, then DEL; a pause asked meanwhile and after; 2 nodes`,
  async run(ctx) {
    const c = new Checks();
    const s = await stage(ctx, 'settings', ['tick', 'local'], { env: { LEASEHOLD_ADMIN_TOKEN: TOKEN } });
    const key = `${s.prefix}:settings`;
    try {
      const nodes = await Promise.all(['a', 'b'].map((id) => s.cluster.start(id)));
      const [a] = nodes;
      if (!a) throw new Error('no node');
      const t0 = Date.now();
      await waitForLog(s.runLog, (ls) => startsOf(ls, 'tick').length > 0, 10_000, 'a run of tick');
      await sleep(ctx.quick ? 2_000 : 3_000);
      await s.client.set(key, 'garbage');
      const corruptAt = Date.now();
      ctx.log(`SET ${key} garbage`);

      const refused = await admin(a, 'pause');
      const body = isObject(refused.body) ? refused.body : {};
      c.add('a pause is answered corruptSettings naming the key, not 503 "Redis unreachable"', refused.status !== 503 && body['code'] === 'corruptSettings' && String(body['message']).includes(key) && !/unreachable/.test(String(body['message'])),
        `${refused.status} ${String(body['code'])}: ${String(body['message']).slice(0, 140)}`);
      for (const n of nodes) {
        const listed = await pollJson(n, '/manage/jobs', (r) => problemsOf(r).some((p) => p['code'] === 'corruptSettings' && p['key'] === key), 5_000);
        c.add(`${n.id}: GET /manage/jobs lists the problem`, listed.ok, listed.ok ? `${Date.now() - corruptAt} ms after the SET` : JSON.stringify(problemsOf(listed.reply)).slice(0, 160));
        const health = await getJson(n, '/health');
        const text = JSON.stringify(health.body);
        c.add(`${n.id}: /health answers 503 naming the settings`, health.status === 503 && /settings/.test(text) && text.includes(key), `${health.status} ${text.slice(0, 160)}`);
      }
      await sleep(ctx.quick ? 3_000 : 7_000);
      for (const n of nodes) {
        const said = n.proc.lines.filter((l) => Number(l['level']) >= 40 && JSON.stringify(l).includes(key));
        c.add(`${n.id} says it once, at warn, with corruptSettings`, said.length === 1 && said[0]?.['level'] === 40 && said[0]['code'] === 'corruptSettings',
          `${said.length} line(s)${said[0] ? `: ${String(said[0]['code'])} ${String(said[0]['msg']).slice(0, 120)}` : ''}`);
      }
      await s.client.del(key);
      const repairAt = Date.now();
      ctx.log(`DEL ${key}`);
      const during = readRunLog(s.runLog);
      const inside = { from: corruptAt + 1_000, to: repairAt - 500 };
      const kept = tickCoverage(during, 'tick', [inside]);
      c.equal('ticks of tick not run while the settings could not be read', kept.notRun.length, 0, `${kept.done} of ${kept.expected} ran`);
      const localRuns = startsOf(during, 'local').filter((l) => l.t > inside.from && l.t < inside.to).length;
      c.atLeast('runs of the 250 ms instance job meanwhile (2 nodes)', localRuns, Math.floor(((inside.to - inside.from) / 250) * 2 * 0.8));

      // Repaired: a pause applies (within a second), the problem goes, a resume applies.
      const paused = await admin(a, 'pause');
      const pauseAt = Date.now();
      c.equal('a pause after the DEL is accepted', paused.status, 200, JSON.stringify(paused.body).slice(0, 120));
      for (const n of nodes) {
        const clear = await pollJson(n, '/manage/jobs', (r) => r.status === 200 && problemsOf(r).length === 0, 5_000);
        c.add(`${n.id}: the problem is gone from GET /manage/jobs`, clear.ok, clear.ok ? `${Date.now() - repairAt} ms after the DEL` : JSON.stringify(problemsOf(clear.reply)).slice(0, 160));
      }
      await sleep(ctx.quick ? 3_000 : 5_000);
      const resumed = await admin(a, 'resume');
      const resumeAt = Date.now();
      c.equal('a resume is accepted', resumed.status, 200);
      await sleep(ctx.quick ? 3_000 : 5_000);
      const { stopAt, all } = await stopGracefully(s, c);
      const whilePaused = startsOf(all, 'tick').filter((l) => l.t > pauseAt + 1_000 && l.t < resumeAt);
      c.equal('runs of tick from 1 s after the pause to the resume', whilePaused.length, 0);
      const again = startsOf(all, 'tick').find((l) => l.t > resumeAt);
      c.add('tick runs again after the resume', again !== undefined && again.t - resumeAt <= 2_000, again ? `${again.t - resumeAt} ms after` : 'it did not');
      const dup = duplicates(all, ['tick']);
      c.equal('ticks run twice', dup, 0);
      const cov = tickCoverage(all, 'tick', [{ from: t0 + 1_000, to: pauseAt - 500 }, { from: resumeAt + 2_000, to: stopAt - 1_000 }]);
      c.equal('ticks of tick outside the pause that did not run', cov.notRun.length, 0);
      const lost = await compareCounts(c, s, all, ['tick', 'local']);
      return { expected: cov.expected, done: cov.done, duplicated: dup, lostCounts: lost, missed: await missedCount(s, ['tick']), checks: c.list };
    } finally {
      await s.teardown();
    }
  },
};
