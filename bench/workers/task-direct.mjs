// The piscina side of S6: the same small task as leasehold's, called by a pool used directly.
export default function square(n) {
  return n * n;
}
