/**
 * Class names that look minified. A decorated method's job or task is named after its class
 * (`ClassName.method`), and a minifier shortens class names (`class a`) and may shorten them
 * differently at the next build: the job would get a new name, a new status and new settings,
 * and the old ones would be orphaned. A class whose name has one or two characters is warned
 * about, unless each of its decorated methods has an explicit id.
 * @module
 */
import type { Registration } from './naming.js';

/** A name as a minifier leaves it: one or two characters. */
const MINIFIED = /^[A-Za-z_$][A-Za-z0-9_$]?$/;

/** A warning for each registration whose class name looks minified and names some of its jobs or tasks. */
export function minifiedNameWarnings(registrations: readonly Registration[]): string[] {
  const warnings: string[] = [];
  for (const r of registrations) {
    if (!MINIFIED.test(r.className)) continue;
    const named = r.methods.filter((m) => (m.declarations[0]?.options.id ?? m.async?.options.id) === undefined).map((m) => JSON.stringify(`${r.className}.${m.method}`));
    if (named.length === 0) continue;
    warnings.push(
      `class "${r.className}": its name looks minified (one or two characters), and ${named.join(', ')} ${named.length === 1 ? 'is' : 'are'} named after it: ` +
        'a build that renames the class renames the jobs and tasks, orphaning their status and settings; ' +
        'give each decorated method an explicit id (@Scheduled({ id }), @Async({ id })), or keep class names in the bundle (esbuild keepNames / --keep-names, terser keep_classnames)',
    );
  }
  return warnings;
}
