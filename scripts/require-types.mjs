// Writes dist/require.d.cts, the declarations of `require('leasehold')` (dist/require.cjs),
// from the exports of dist/index.d.ts, and dist/nestjs/require.d.cts and dist/express/require.d.cts likewise for `leasehold/nestjs` and `leasehold/express`. `npm run build` runs it after tsc.
//
// require.cjs hands CommonJS code the ES module itself, so its declarations are the ES
// module's. TypeScript cannot say that of a CommonJS file directly: `export = ` of the module
// namespace carries its values but none of its types, and `export * from './index.js'` is an
// error under `module: node16` (a CommonJS file that imports an ES module, TS1479). What works
// under node16 and nodenext alike is a type-only re-export with `resolution-mode: import` for
// the types, and a declaration per value. The values are listed here from the compiler's view
// of index.d.ts, so a new export needs no change; a value that is also a generic type (which
// would need its type parameters written out) is refused until this script learns it.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The entries with a CommonJS side: the ES module's declarations, and where to write the CommonJS ones. */
const ENTRIES = [
  { index: '../dist/index.d.ts', target: '../dist/require.d.cts', name: 'leasehold', as: 'Leasehold' },
  { index: '../dist/nestjs/index.d.ts', target: '../dist/nestjs/require.d.cts', name: 'leasehold/nestjs', as: 'Nest' },
  { index: '../dist/express/index.d.ts', target: '../dist/express/require.d.cts', name: 'leasehold/express', as: 'Express' },
];

for (const entry of ENTRIES) {
  const index = fileURLToPath(new URL(entry.index, import.meta.url));
  const target = fileURLToPath(new URL(entry.target, import.meta.url));
  writeFileSync(target, declarations(index, entry.name, entry.as));
}

function declarations(index, name, as) {
  const program = ts.createProgram([index], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: [],
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(index);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`scripts/require-types.mjs: cannot read ${index}: run tsc first`);

  const lines = [
    '/**',
    ` * The declarations of \`require('${name}')\`: the ES module itself (index.d.ts), for`,
    ' * CommonJS code on Node.js 20.19 and later. Written by scripts/require-types.mjs at build time.',
    ' * @module',
    ' */',
    "export type * from './index.js' with { 'resolution-mode': 'import' };",
    `import type * as ${as} from './index.js' with { 'resolution-mode': 'import' };`,
  ];
  const values = [];
  for (const symbol of checker.getExportsOfModule(module)) {
    const resolved = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const name = symbol.getName();
    if (!(resolved.flags & ts.SymbolFlags.Value)) continue; // a type alone: the type-only re-export has it
    if (resolved.flags & ts.SymbolFlags.Namespace) throw new Error(`scripts/require-types.mjs: ${name} is a namespace, which this script does not declare`);
    values.push(name);
    lines.push(`export declare const ${name}: typeof ${as}.${name};`);
    // A local export hides every meaning of the re-exported name, so a class's type is declared again.
    if (resolved.flags & ts.SymbolFlags.Type) {
      const generic = (resolved.declarations ?? []).some((d) => 'typeParameters' in d && d.typeParameters && d.typeParameters.length > 0);
      if (generic) throw new Error(`scripts/require-types.mjs: ${name} is a value and a generic type, which this script does not declare yet`);
      lines.push(`export type ${name} = ${as}.${name};`);
    }
  }
  if (values.length === 0) throw new Error(`scripts/require-types.mjs: ${index} exports no value`);
  return `${lines.join('\n')}\n`;
}
