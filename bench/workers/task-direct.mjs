// The piscina side of S6: the same tasks as leasehold's, called by a pool used directly.
export { burn } from './burn.mjs';

/** The no-op task. */
export default function square(n) {
  return n * n;
}
