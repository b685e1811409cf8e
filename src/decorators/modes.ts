/**
 * The two ways TypeScript calls a method decorator. Standard decorators (TypeScript 5, no
 * `experimentalDecorators`) call it with the method and a context object; a project compiled
 * with `experimentalDecorators` (NestJS, Angular, TypeORM) calls it with the prototype (the
 * class itself for a static method), the property key and the property's descriptor. The
 * decorators accept both, so one class reads the same in either kind of project.
 * @module
 */
import { ErrorCodes, LeaseholdError } from '../errors.js';
import type { JobContext } from '../schedule/job.js';

/** `@Scheduled(...)` as TypeScript sees it: a method decorator under either decorator mode. */
export interface ScheduledDecorator {
  /** As a standard (TypeScript 5) decorator. */
  <This, F extends (this: This, ctx: JobContext) => unknown>(method: F, context: ClassMethodDecoratorContext<This, F>): void;
  /** As an `experimentalDecorators` decorator. */
  <F extends (ctx: JobContext) => unknown>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<F>): void;
}

/** `@Async(...)` as TypeScript sees it: a method decorator under either decorator mode. */
export interface AsyncDecorator {
  /** As a standard (TypeScript 5) decorator: returns the method that submits. */
  <This, A extends unknown[], R>(method: (this: This, ...args: A) => Promise<R>, context: ClassMethodDecoratorContext<This, (this: This, ...args: A) => Promise<R>>): (this: This, ...args: A) => Promise<R>;
  /** As an `experimentalDecorators` decorator: puts the method that submits in the descriptor. */
  <F extends (...args: never[]) => Promise<unknown>>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<F>): void;
}

/** A method as an `experimentalDecorators` decorator is given it. */
export interface LegacyMethod {
  /** The method's name. */
  readonly name: string;
  /** The class's name. */
  readonly className: string;
  readonly descriptor: PropertyDescriptor;
}

/** How a decorator says a method cannot take it: the class, the method and why. */
export type Refusal = (className: string, name: string, why: 'static' | 'symbol' | 'not a method') => string;

function classNameOf(owner: unknown): string {
  return typeof owner === 'function' && owner.name ? owner.name : 'anonymous';
}

/**
 * The method an `experimentalDecorators` call decorates, or undefined for a standard call.
 * @throws LeaseholdError `invalidDecorator` when the decorated member cannot take the decorator
 * (a static method, a symbol-named one, a field or accessor), with the message `refuse` makes.
 */
export function legacyMethod(target: unknown, key: unknown, descriptor: unknown, refuse: Refusal): LegacyMethod | undefined {
  if (typeof key === 'object' && key !== null && 'kind' in key) return undefined;
  if (typeof key !== 'string' && typeof key !== 'symbol') {
    throw new LeaseholdError(ErrorCodes.invalidDecorator, refuse('anonymous', String(key), 'not a method'));
  }
  const isStatic = typeof target === 'function';
  const className = classNameOf(isStatic ? target : (target as { constructor?: unknown } | null)?.constructor);
  const name = String(key);
  if (isStatic) throw new LeaseholdError(ErrorCodes.invalidDecorator, refuse(className, name, 'static'));
  if (typeof key === 'symbol') throw new LeaseholdError(ErrorCodes.invalidDecorator, refuse(className, name, 'symbol'));
  const d = descriptor as PropertyDescriptor | undefined;
  if (typeof d !== 'object' || d === null || typeof d.value !== 'function') {
    throw new LeaseholdError(ErrorCodes.invalidDecorator, refuse(className, name, 'not a method'));
  }
  return { name, className, descriptor: d };
}
