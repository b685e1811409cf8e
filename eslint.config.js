import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { LAYERS, MODULES, RUNNER_LEASE_FILES } from './scripts/layers.mjs';

/**
 * The layering of src/ (scripts/layers.mjs, drawn in docs/architecture.md) as import rules:
 * for each module, every other module it may not import, and the packages it must not use.
 */
function layerRules() {
  return Object.entries(LAYERS).map(([name, layer]) => {
    const folder = name === 'create' || name === 'index' ? undefined : name;
    const forbidden = MODULES.filter((m) => m !== name && !layer.may.includes(m) && !MODULES.slice(0, 4).includes(m));
    // From a folder of src/ the others are `../<module>`; from a top-level file, `./<module>`.
    const up = folder ? '..' : '.';
    const group = forbidden.flatMap((m) => [`${up}/${m}/*`, `${up}/${m}.js`]);
    if (name === 'runner') {
      group.push(...['lease', 'redis-coordinator', 'watcher'].filter((f) => !RUNNER_LEASE_FILES.includes(f)).map((f) => `../lease/${f}.js`));
    }
    return {
      files: folder ? [`src/${folder}/**/*.ts`] : [`src/${name}.ts`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            paths: layer.noPackages.map((p) => ({ name: p, message: `${name}/ does not use ${p}: see docs/architecture.md` })),
            patterns: [{ group, message: `${name} may not import this module: see docs/architecture.md (the layers)` }],
          },
        ],
      },
    };
  });
}

/** Leaves import no other part of leasehold but errors.ts (the error class is beneath everything). */
const leafRule = {
  files: ['src/errors.ts', 'src/clock.ts', 'src/logger.ts', 'src/config.ts'],
  rules: {
    'no-restricted-imports': ['error', { patterns: [{ group: ['./*', '../*', '!./errors.js'], message: 'a leaf module imports no other part of leasehold but errors.ts: see docs/architecture.md' }] }],
  },
};

/** Time goes through src/clock.ts, so tests can drive all of it. */
const timeRule = {
  files: ['src/**/*.ts'],
  ignores: ['src/clock.ts'],
  rules: {
    'no-restricted-globals': [
      'error',
      ...['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'performance'].map((name) => ({ name, message: 'use the Clock (src/clock.ts): tests drive time through it' })),
    ],
    'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'use the Clock (src/clock.ts): tests drive time through it' }],
  },
};

/**
 * The status page's script (src/http/ui/client/) runs in the browser, not in a node: its
 * countdowns and reconnections use the browser's clock and timers, which no test drives.
 */
const browserRule = {
  files: ['src/http/ui/client/**/*.ts'],
  rules: { 'no-restricted-globals': 'off', 'no-restricted-properties': 'off' },
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: false }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  ...layerRules(),
  leafRule,
  timeRule,
  browserRule,
);
