/**
 * Finds the `@Cron`, `@Interval` and `@Timeout` methods of the providers and controllers Nest
 * created (through its `DiscoveryService`) and makes them leasehold jobs and tasks run on those
 * instances; starts the runner once the application has bootstrapped and stops it, with its
 * grace for runs in progress, when the application shuts down.
 * @module
 */
import { Logger } from '@nestjs/common';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { ErrorCodes, LeaseholdError, type JobContext, type JobDefinition, type JobScope, type Runner } from '../index.js';
import type { Timers, TimerHandle } from '../clock.js';
import { declarationOf, type NestDeclaration, type TimeoutOptions } from './declarations.js';
import { offsetZone } from './expressions.js';
import { CronJob, ScheduledWork, type SchedulerRegistry } from './registry.js';

type Wrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** A decorated method of a provider or controller. */
interface Found {
  readonly className: string;
  readonly method: string;
  readonly declaration: NestDeclaration;
  /** Calls the method on Nest's instance. */
  readonly call: (ctx: unknown) => unknown;
}

const LABEL = { cron: '@Cron', interval: '@Interval', timeout: '@Timeout' } as const;

/** Makes the decorated methods jobs and runs the runner with the application. */
export class LeaseholdExplorer {
  private readonly log = new Logger('Leasehold');
  private readonly timers = new Set<TimerHandle>();
  /** What starts once the runner has: timeouts, and crons with an initial delay. */
  private readonly delayed: Array<() => void> = [];
  private started = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly runner: Runner,
    private readonly registry: SchedulerRegistry,
    private readonly defaultScope: JobScope,
    private readonly clock: Timers,
  ) {}

  /** Nest's hook: registers what was found and starts the runner. */
  async onApplicationBootstrap(): Promise<void> {
    const found = this.explore();
    const errors: string[] = [];
    for (const f of found) {
      try {
        this.schedule(f);
      } catch (err) {
        if (!(err instanceof LeaseholdError)) throw err;
        errors.push(err.message);
      }
    }
    if (errors.length > 0) throw new LeaseholdError(ErrorCodes.invalidJob, errors.join('\n'));
    await this.runner.start();
    this.started = true;
    for (const start of this.delayed) start();
  }

  /** Nest's hook (before the HTTP server closes): no new run; runs in progress get the grace. */
  async beforeApplicationShutdown(): Promise<void> {
    for (const t of this.timers) this.clock.clearTimer(t);
    this.timers.clear();
    if (this.started) await this.runner.stop();
    this.started = false;
  }

  private explore(): Found[] {
    const wrappers: Wrapper[] = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    const found: Found[] = [];
    const refused: string[] = [];
    for (const w of wrappers) {
      const instance: unknown = w.instance;
      const isStatic = w.isDependencyTreeStatic() && !w.isTransient;
      const proto: unknown = isStatic ? (typeof instance === 'object' && instance !== null ? Object.getPrototypeOf(instance) : undefined) : (w.metatype as { prototype?: unknown } | null | undefined)?.prototype;
      if (typeof proto !== 'object' || proto === null) continue;
      for (const method of this.scanner.getAllMethodNames(proto)) {
        const declaration = declarationOf((proto as Record<string, unknown>)[method]);
        if (!declaration) continue;
        const ctor = (proto as { constructor?: { name?: string } }).constructor;
        const className = ctor?.name || 'anonymous';
        if (!isStatic) {
          refused.push(
            `${LABEL[declaration.kind]} on ${className}.${method}: ${className} is ${w.isTransient ? 'transient' : 'request-scoped (or depends on a request-scoped provider)'}, ` +
              'so Nest has no one instance to run it on: schedule methods of singleton providers (the default scope), and have them call the scoped ones',
          );
          continue;
        }
        const target = instance as Record<string, (ctx: unknown) => unknown>;
        found.push({ className, method, declaration, call: (ctx) => target[method]?.call(target, ctx) });
      }
    }
    if (refused.length > 0) throw new LeaseholdError(ErrorCodes.invalidDecorator, refused.join('\n'));
    return found;
  }

  private schedule(f: Found): void {
    const d = f.declaration;
    if (d.kind === 'cron') {
      const id = d.options.name ?? `${f.className}.${f.method}`;
      if (d.cronTime instanceof Date) {
        this.once(id, d.cronTime.getTime() - this.clock.now(), f, {});
        return;
      }
      const { name: _name, timeZone, utcOffset, disabled, initialDelay, waitForCompletion: _w, unrefTimeout: _u, threshold: _t, ...options } = d.options;
      const zone = timeZone ?? (utcOffset !== undefined ? offsetZone(utcOffset) : undefined);
      const job = new CronJob(d.cronTime, (ctx: JobContext) => f.call(ctx), null, disabled !== true && initialDelay === undefined, zone, options);
      this.registry.addCronJob(id, job);
      if (disabled !== true && initialDelay !== undefined) this.delayed.push(() => void this.later(initialDelay, () => job.start()));
      return;
    }
    const id = d.name ?? `${f.className}.${f.method}`;
    if (d.kind === 'interval') {
      const { scope, ...options } = d.options;
      this.runner.add({ ...options, id, scope: scope ?? this.defaultScope, fixedRate: d.ms, run: (ctx) => f.call(ctx) } as JobDefinition);
      this.registry.addInterval(id, new ScheduledWork(id, () => void this.runner.remove(id)));
      return;
    }
    this.once(id, d.ms, f, d.options);
  }

  /** A `@Timeout` (or a `@Cron` at a `Date`): a task submitted once, `ms` after bootstrap, in this process. */
  private once(id: string, ms: number, f: Found, options: TimeoutOptions): void {
    this.runner.addTask({ ...options, id, run: (_payload: unknown, ctx: unknown) => f.call(ctx) });
    let timer: TimerHandle | undefined;
    const fire = (): void => {
      this.registry.deleteTimeout(id);
      void this.runner
        .submit(id, undefined)
        .then((handle) => handle.result())
        .then(undefined, (err: unknown) => this.log.error(`${id} failed: ${err instanceof Error ? err.message : String(err)}`));
    };
    this.registry.addTimeout(
      id,
      new ScheduledWork(id, () => {
        if (timer === undefined) return;
        this.clock.clearTimer(timer);
        this.timers.delete(timer);
      }),
    );
    this.delayed.push(() => {
      timer = this.later(Math.max(0, ms), fire);
    });
  }

  private later(ms: number, fire: () => void): TimerHandle {
    const t = this.clock.setTimer(() => {
      this.timers.delete(t);
      fire();
    }, ms);
    this.timers.add(t);
    return t;
  }
}
