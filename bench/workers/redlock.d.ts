/**
 * The part of redlock 5's API the benchmark uses. Its own declarations are not reachable
 * through the package's `exports` under NodeNext resolution, so they are restated here.
 */
declare module 'redlock' {
  import type { EventEmitter } from 'node:events';
  import type { Redis } from 'ioredis';

  /** Settings of a Redlock instance or one acquisition. */
  export interface Settings {
    readonly driftFactor?: number;
    readonly retryCount?: number;
    readonly retryDelay?: number;
    readonly retryJitter?: number;
    readonly automaticExtensionThreshold?: number;
  }
  /** A resource was locked by someone else (emitted as `error` per lost vote). */
  export class ResourceLockedError extends Error {}
  /** An acquisition, extension or release did not reach a quorum. */
  export class ExecutionError extends Error {}
  /** A held lock. */
  export interface Lock {
    readonly resources: string[];
    readonly value: string;
    expiration: number;
    release(): Promise<unknown>;
  }
  /** The Redlock client. */
  export default class Redlock extends EventEmitter {
    constructor(clients: Iterable<Redis>, settings?: Settings);
    acquire(resources: string[], duration: number, settings?: Settings): Promise<Lock>;
  }
}
