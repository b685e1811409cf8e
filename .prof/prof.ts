import { createRunner, defineTask, type TaskHandle } from '/work/wt-tasks/dist/index.js';
const silent = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {}, child: () => silent, isLevelEnabled: () => false };
const runner = createRunner({ logger: silent, executors: { io: { kind: 'loop', concurrency: 50 } } });
const task = defineTask({ id: 'square', executor: 'io', run: async (n: number) => { await null; return n * n; } });
await runner.start();
for (let round = 0; round < 3; round++) {
const t0 = performance.now();
const handles: TaskHandle<number>[] = [];
for (let i = 0; i < 20000; i++) handles.push(await runner.submit(task, i));
await Promise.all(handles.map((h) => h.result()));
console.log('per task us', ((performance.now() - t0) * 1000 / 20000).toFixed(1));
}
await runner.stop();
