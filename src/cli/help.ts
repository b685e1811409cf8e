/**
 * Each command's `--help`: its usage, its flags and the environment variables it reads,
 * rendered from the tables the parsers use, so the help cannot drift from them.
 * @module
 */

/** One entry of a command's help: a flag, an environment variable, or both. */
export interface HelpOption {
  /** The flag with its value, as typed: `--zone <zone>`, `-n, --count <n>`. */
  readonly flag?: string | undefined;
  /** The environment variable read when the flag is not given. */
  readonly env?: string | undefined;
  /** The default, shown after the description. */
  readonly default?: string | undefined;
  /** What it means; Markdown backticks are dropped. */
  readonly description: string;
}

/** A command's help. */
export interface CommandHelp {
  /** The usage line(s), without `usage: `. */
  readonly usage: readonly string[];
  /** What the command does, one or two sentences. */
  readonly summary: string;
  /** Flags (each with the variable it falls back to, if any). */
  readonly options: readonly HelpOption[];
  /** Environment variables without a flag. */
  readonly environment?: readonly HelpOption[];
  /** Closing lines: exit statuses, where to read more. */
  readonly notes?: readonly string[];
}

/** `-h, --help` in every command's help. */
export const HELP_OPTION: HelpOption = { flag: '-h, --help', description: 'Print this help and exit.' };

const WIDTH = 100;
const INDENT = '        ';

function plain(text: string): string {
  return text.replace(/`/g, '');
}

/** Wraps `text` at word boundaries, each line starting with `indent`. */
function wrap(text: string, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== '' && indent.length + line.length + 1 + word.length > WIDTH) {
      lines.push(indent + line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(indent + line);
  return lines.join('\n');
}

function entry(o: HelpOption): string {
  const head = [o.flag, o.env ? (o.flag ? `(env ${o.env})` : o.env) : undefined].filter(Boolean).join('  ');
  // `(none)` shows as `none`, `(none: admin routes refused)` as `none (admin routes refused)`.
  const shownDefault = o.default === undefined ? undefined : plain(o.default).replace(/^\((\w+)\)$/, '$1').replace(/^\((\w+): (.*)\)$/, '$1 ($2)');
  const text = shownDefault === undefined ? plain(o.description) : `${plain(o.description)} Default: ${shownDefault}.`;
  return `  ${head}\n${wrap(text, INDENT)}`;
}

/** Renders a command's help as printed by `leasehold <command> --help`. */
export function renderHelp(h: CommandHelp): string {
  const parts = [h.usage.map((u, i) => `${i === 0 ? 'usage: ' : '       '}${u}`).join('\n'), wrap(plain(h.summary), '')];
  const withEnv = h.options.some((o) => o.env !== undefined);
  parts.push(`${withEnv ? 'Options (a flag wins over its environment variable):' : 'Options:'}\n${[...h.options, HELP_OPTION].map(entry).join('\n')}`);
  const env = h.environment ?? [];
  const read = [...h.options.flatMap((o) => (o.env ? [o.env] : [])), ...env.flatMap((o) => (o.env ? [o.env] : []))];
  if (env.length > 0) parts.push(`Environment (no flag):\n${env.map(entry).join('\n')}`);
  parts.push(read.length > 0 ? wrap(`Environment variables read: ${read.join(', ')}.`, '') : 'Environment variables read: none.');
  if (h.notes && h.notes.length > 0) parts.push(h.notes.map((n) => wrap(plain(n), '')).join('\n'));
  return `${parts.join('\n\n')}\n`;
}
