// Copies the Lua scripts next to the compiled code so dist/ is self-contained.
import { cpSync, existsSync } from 'node:fs';

const from = new URL('../src/redis/scripts/', import.meta.url);
const to = new URL('../dist/redis/scripts/', import.meta.url);
if (existsSync(from)) cpSync(from, to, { recursive: true, filter: (p) => !p.endsWith('.ts') });
