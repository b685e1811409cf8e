/**
 * Every command answers `--help` and `-h` with its usage, its flags and the environment
 * variables it reads (exit 0), from the tables its parser uses; `--version` prints the version.
 * Runs the built CLI (`npm run build` first).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CONFIG } from '../src/cli/config.js';
import { REDIS_FLAGS } from '../src/cli/status.js';
import { runLeasehold } from './helpers/node.js';

const COMMANDS = ['next', 'check', 'start', 'status', 'forget'] as const;
const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function help(args: string[]): Promise<string> {
  const r = await runLeasehold(args);
  assert.equal(r.code, 0, `leasehold ${args.join(' ')}: exit ${String(r.code)}, stderr ${r.stderr}`);
  assert.equal(r.stderr, '', `leasehold ${args.join(' ')} writes nothing to stderr`);
  return r.stdout;
}

test('every command answers --help and -h with its usage, exit 0', async () => {
  for (const command of COMMANDS) {
    for (const flag of ['--help', '-h']) {
      const out = await help([command, flag]);
      assert.match(out, new RegExp(`^usage: leasehold ${command}\\b`), `${command} ${flag}`);
      assert.match(out, /-h, --help/, `${command} ${flag}`);
      assert.match(out, /Environment variables read: /, `${command} ${flag}`);
    }
  }
});

test('--help wins wherever it stands among the options: start --jobs x --help, check --help, next "<cron>" --help', async () => {
  assert.match(await help(['start', '--jobs', 'no-such-module.ts', '--help']), /^usage: leasehold start/);
  assert.match(await help(['check', '--help']), /^usage: leasehold check <jobs-module>/);
  assert.match(await help(['next', '0 0 * * * *', '--zone', 'UTC', '-h']), /^usage: leasehold next/);
  assert.match(await help(['help', 'next']), /^usage: leasehold next/);
});

test('start --help lists every flag and variable of the configuration table, with its value and default', async () => {
  const out = await help(['start', '--help']);
  for (const e of CONFIG) {
    if (e.flag) assert.ok(out.includes(e.value ? `${e.flag} <${e.value}>` : e.flag), `${e.flag} in start --help`);
    if (e.env) assert.ok(out.includes(e.env), `${e.env} in start --help`);
  }
  assert.match(out, /--port <port> {2}\(env PORT\)\n\s+HTTP port of the status API; 0 picks a free port \(the node logs it\)\. Default: 3000\./);
  assert.match(out, /LEASEHOLD_ADMIN_TOKEN\n\s+Bearer token/);
});

test('status and forget --help list the shared Redis flags with their variables', async () => {
  for (const command of ['status', 'forget']) {
    const out = await help([command, '--help']);
    for (const name of Object.keys(REDIS_FLAGS)) {
      const e = CONFIG.find((c) => c.flag === `--${name}`);
      assert.ok(e?.env, `--${name} is in the configuration table with a variable`);
      assert.ok(out.includes(`--${name} <${e.value ?? ''}>  (env ${e.env})`), `--${name} (env ${e.env}) in ${command} --help`);
    }
  }
  assert.match(await help(['status', '--help']), /--json\n/);
});

test('mcp --help names the variables it reads without a flag: the admin token and the log level', async () => {
  const out = await help(['mcp', '--help']);
  assert.match(out, /^usage: leasehold mcp\b/);
  assert.match(out, /Environment \(no flag\):\n {2}LEASEHOLD_ADMIN_TOKEN\n\s+Without it the tools that change jobs are refused/);
  const read = /Environment variables read: ([^.]*)\./.exec(out.replace(/\n\s*/g, ' '))?.[1]?.split(', ') ?? [];
  for (const name of ['LEASEHOLD_ADMIN_TOKEN', 'LOG_LEVEL', 'REDIS_URL']) assert.ok(read.includes(name), `${name} among the variables read: ${read.join(', ')}`);
});

test('next --help lists --zone, --from and -n; check --help says what it checks', async () => {
  const next = await help(['next', '--help']);
  for (const flag of ['--zone <zone>', '--from <iso>', '-n, --count <count>']) assert.ok(next.includes(flag), flag);
  assert.match(next, /Environment variables read: none\./);
  assert.match(await help(['check', '-h']), /default export is an array of jobs/);
});

test('leasehold --help lists every command; --version and -v print the version', async () => {
  for (const flag of ['--help', '-h', 'help']) {
    const out = await help([flag]);
    for (const command of COMMANDS) assert.match(out, new RegExp(`^  ${command}\\b`, 'm'), `${command} in leasehold ${flag}`);
    assert.match(out, /-v, --version/);
  }
  for (const flag of ['--version', '-v']) assert.equal(await help([flag]), `${version}\n`);
});
