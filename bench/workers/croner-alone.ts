/**
 * The floor: one process, a croner timer per job, no coordination at all, the shared job
 * body. What S1's lateness cannot go below on this machine.
 * @module
 */
import { Cron } from 'croner';
import { body, countCommands, fail, openRecorder, readConfig, serve } from './kit.js';

async function main(): Promise<void> {
  const config = readConfig();
  const counts = countCommands();
  const recorder = openRecorder(config.recordFile);
  const crons: Cron[] = [];
  for (let i = 0; i < config.jobs; i++) {
    crons.push(new Cron(config.cron, () => body(recorder.record, i, Math.floor(Date.now() / config.periodMs) * config.periodMs)));
  }
  serve({
    counts,
    extra: () => ({}),
    stop: async () => {
      for (const c of crons) c.stop();
      recorder.close();
    },
  });
}

main().catch(fail);
