import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import layers from './scripts/eslint-layers.mjs';

/**
 * The layering of src/ (scripts/layers.mjs, drawn in docs/architecture.md): every import of
 * every file, wherever it sits and however it is written, lands in a module its layer allows.
 */
const layerRule = {
  files: ['src/**/*.{ts,mts,cts}'],
  plugins: { layers },
  rules: { 'layers/imports': 'error' },
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
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**', 'docs/.vitepress/cache/**', 'docs/.vitepress/dist/**'] },
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
  layerRule,
  timeRule,
  browserRule,
);
