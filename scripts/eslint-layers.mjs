// The layering of src/ (the table in scripts/layers.mjs, drawn in docs/architecture.md) as a
// lint rule, and the module mapping it judges with, which test/architecture.test.ts shares.
// Each relative specifier is resolved against the importing file's path and mapped to the
// module it lands in, so no spelling of a path (`../lease/../http/x.js`, a nested folder's
// `../../redis/x.js`) slips past a pattern.
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LAYERS, LEAVES, RUNNER_LEASE_FILES } from './layers.mjs';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const SEE = 'see the layers in scripts/layers.mjs and docs/architecture.md';

/** The module of a path: its folder under src/, or its own name (less the extension) at the top; undefined outside src/. */
export function moduleOf(path) {
  const rel = relative(SRC, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
  const [first, ...rest] = rel.split(sep);
  return rest.length > 0 ? first : first.replace(/\.[^.]+$/, '');
}

/** What a specifier written in `file` reaches: a file (its absolute path), or a package (undefined). */
export function targetOf(file, specifier) {
  return specifier.startsWith('.') || isAbsolute(specifier) ? resolve(dirname(file), specifier) : undefined;
}

/**
 * Why `file` may not import `specifier`, or undefined when it may. Judged by the modules the
 * two land in: a module imports itself and the leaves; a leaf imports nothing of leasehold
 * but errors.ts; any other module what its `may` list names and none of its `noPackages`;
 * the runner reaches lease/ only through RUNNER_LEASE_FILES.
 */
export function forbiddenImport(file, specifier) {
  const from = moduleOf(file);
  if (from === undefined) return undefined;
  const layer = LAYERS[from];
  const target = targetOf(file, specifier);
  if (target === undefined) {
    const banned = layer?.noPackages.find((p) => specifier === p || specifier.startsWith(`${p}/`));
    return banned && `${from} may not use the package ${banned}: ${SEE}`;
  }
  const to = moduleOf(target);
  if (to === undefined) return `${from} may not import ${specifier}, which is outside src/`;
  if (to === from) return undefined;
  if (LEAVES.includes(from)) return to === 'errors' ? undefined : `${from} may not import ${to}: a leaf imports nothing of leasehold but errors; ${SEE}`;
  if (LEAVES.includes(to)) return undefined;
  if (layer === undefined) return `${from} may not import ${to}: ${from} is in no layer of scripts/layers.mjs`;
  if (!layer.may.includes(to)) return `${from} may not import ${to} (${specifier}): ${SEE}`;
  if (from === 'runner' && to === 'lease') {
    const leaseFile = relative(resolve(SRC, 'lease'), target).replace(/\.[^.]+$/, '');
    if (!RUNNER_LEASE_FILES.includes(leaseFile)) return `runner may not import lease/${basename(target)}, only ${RUNNER_LEASE_FILES.map((f) => `lease/${f}`).join(' and ')}: ${SEE}`;
  }
  return undefined;
}

/**
 * ESLint visitors that call `onImport(specifier, node)` for every import a file writes with a
 * string: static imports (side-effect ones too), `export ... from`, dynamic `import()`,
 * TypeScript's inline `import('...').X` and `import x = require('...')`, and `require('...')`.
 */
export function importVisitors(onImport) {
  const text = (node) => {
    if (node?.type === 'Literal' && typeof node.value === 'string') onImport(node.value, node);
    else if (node?.type === 'TemplateLiteral' && node.expressions.length === 0) onImport(node.quasis[0].value.cooked, node);
  };
  return {
    ImportDeclaration: (node) => text(node.source),
    ExportNamedDeclaration: (node) => text(node.source),
    ExportAllDeclaration: (node) => text(node.source),
    ImportExpression: (node) => text(node.source),
    TSImportType: (node) => text(node.source),
    TSExternalModuleReference: (node) => text(node.expression),
    'CallExpression[callee.type="Identifier"][callee.name="require"]': (node) => text(node.arguments[0]),
  };
}

/** `layers/imports`: every import of a file of src/ is one its layer allows. */
const imports = {
  meta: {
    type: 'problem',
    docs: { description: 'Keeps the layers of src/ drawn in docs/architecture.md' },
    schema: [],
    messages: { forbidden: '{{why}}' },
  },
  create: (context) =>
    importVisitors((specifier, node) => {
      const why = forbiddenImport(context.filename, specifier);
      if (why !== undefined) context.report({ node, messageId: 'forbidden', data: { why } });
    }),
};

/** The plugin eslint.config.js uses as `layers`. */
export default { meta: { name: 'leasehold-layers' }, rules: { imports } };
