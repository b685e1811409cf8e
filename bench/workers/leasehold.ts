/**
 * A leasehold node for the benchmark: the built library (`dist/`), one installation job
 * per id on the configured cron, the shared job body.
 * @module
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { jobId } from '../protocol.js';
import { body, countCommands, fail, openRecorder, readConfig, serve } from './kit.js';

type Leasehold = typeof import('../../src/index.js');

async function main(): Promise<void> {
  const config = readConfig();
  const counts = countCommands();
  const { createRunner } = (await import(pathToFileURL(resolve('dist/index.js')).href)) as Leasehold;
  const recorder = openRecorder(config.recordFile);
  const runner = createRunner({
    redisUrl: config.redisUrl,
    prefix: config.prefix,
    instanceId: `bench-${config.index}`,
    logger: pino({ level: 'warn' }),
    shutdownGrace: '2s',
  });
  for (let i = 0; i < config.jobs; i++) {
    runner.add({
      id: jobId(i),
      scope: 'installation',
      cron: config.cron,
      lease: config.leaseMs,
      run: (ctx) => body(recorder.record, i, ctx.scheduledAt.getTime()),
    });
  }
  const extra = { claimsLost: 0, missedReported: 0 };
  runner.on('skipped', (e) => {
    if (e.reason === 'claimed') extra.claimsLost++;
  });
  runner.on('missed', (e) => {
    extra.missedReported += e.count;
  });
  await runner.start();
  serve({
    counts,
    extra: () => ({ ...extra }),
    stop: async () => {
      await runner.stop();
      recorder.close();
    },
  });
}

main().catch(fail);
