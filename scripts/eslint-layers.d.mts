// Types of scripts/eslint-layers.mjs (the layers' lint rule and its module mapping), for the tests that use them.
import type { ESLint, Rule } from 'eslint';

export declare function moduleOf(path: string): string | undefined;
export declare function targetOf(file: string, specifier: string): string | undefined;
export declare function forbiddenImport(file: string, specifier: string): string | undefined;
export declare function importVisitors(onImport: (specifier: string, node: Rule.Node) => void): Rule.RuleListener;
declare const plugin: ESLint.Plugin;
export default plugin;
