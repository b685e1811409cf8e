/**
 * Reading the repository's deployment files in tests: paths from the root, and typed access
 * to parsed YAML/JSON that fails the test with a message naming what is not the expected shape.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** A file's text, by its path from the root. */
export const read = (path: string): string => readFileSync(`${ROOT}/${path}`, 'utf8');
/** Whether a file exists, by its path from the root. */
export const exists = (path: string): boolean => existsSync(`${ROOT}/${path}`);

/** A parsed mapping. */
export type Obj = Record<string, unknown>;
/** Is this a mapping (not an array, not null)? */
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `v` as a mapping, or a failed assertion naming `what`. */
export function obj(v: unknown, what: string): Obj {
  assert.ok(isObj(v), `${what} is a mapping`);
  return v;
}

/** `v` as a list of mappings, or a failed assertion naming `what`. */
export function list(v: unknown, what: string): Obj[] {
  assert.ok(Array.isArray(v) && v.every(isObj), `${what} is a list of mappings`);
  return v as Obj[];
}
