/**
 * Who claims an installation tick, by rendezvous (highest-random-weight) hashing over the
 * live nodes that run the same jobs: for each job and tick every node computes the same
 * weights from the same names, so they agree on the first and second claimer without talking.
 * The weight covers the tick as well as the job, so a job's ticks rotate over the nodes and
 * the ticks due at one instant are spread over all of them; a fixedDelay job, which has no
 * shared tick, ranks by the job alone.
 *
 * A node ranked first that lets a cron or fixedRate tick pass to its backup (it died, or
 * stalled) is suspected by that backup: the backup claims the ticks that node ranks first for
 * on the tick, reading first, rather than a hand-off delay after it, until it finds one of them
 * due later claimed (the node claims again) or the node leaves the live nodes (a node back under
 * the same id is found claiming at its first tick). A node ranked behind a suspect passes over
 * it: ranked third behind one, it is the backup of the other node ahead, two hand-off delays
 * late (that node, if it lives, claims first); behind two it suspects, it claims on the tick.
 * So when two nodes die at once the others take their ticks from the first few, not when the
 * heartbeats drop them. A live node claims ahead of its ticks, so the backup's read at the tick
 * finds its next one claimed: a node wrongly suspected costs a read, or a tick it claims late
 * runs on its backup, never a run twice.
 * @module
 */
import type { ClaimOrder } from '../runner/order.js';

/** How long after a tick the backup claimer claims unless configured, ms. */
export const DEFAULT_HANDOFF_MS = 100;

/** 32-bit FNV-1a of a string. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** MurmurHash3's finaliser: every bit of the input moves every bit of the output. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The weight of `node` for the job's tick (the tick undefined for a fixedDelay job). */
export function weight(jobHash: number, tick: number | undefined, nodeHash: number): number {
  const t = tick === undefined ? 0 : mix((tick % 0x100000000) ^ mix(Math.floor(tick / 0x100000000)));
  return mix(jobHash ^ mix(t ^ nodeHash));
}

/**
 * The claim order over `peers()` (this node's live peers, itself included, as the registry
 * last saw them). A node alone is always first.
 */
export function rendezvousOrder(self: string, peers: () => readonly string[], handoffMs = DEFAULT_HANDOFF_MS): ClaimOrder {
  const jobHashes = new Map<string, number>();
  const nodeHashes = new Map<string, number>();
  const hashOf = (cache: Map<string, number>, key: string): number => {
    let h = cache.get(key);
    if (h === undefined) {
      h = fnv1a(key);
      cache.set(key, h);
    }
    return h;
  };
  // The nodes ranked first that let a tick pass to this node, their backup, and have not been
  // found to claim a later one: by the tick they let pass. A tick due as early found claimed says
  // nothing of now (a node killed once it had claimed some of a tick's jobs and not the others).
  // Where this node ranks behind a suspect, it ranks a place higher: two nodes killed at once
  // have the third take the ticks they ranked first and second. A suspect that leaves the live
  // nodes is forgotten (see livePeers).
  const suspects = new Map<string, number>();
  /** Whether `node`, of weight `w`, ranks ahead of this node, of weight `mine` (ties go to the smaller id, so every node breaks them alike). */
  const ranksAhead = (node: string, w: number, mine: number): boolean => w > mine || (w === mine && node < self);
  // The live nodes last read; a suspect no longer among them is forgotten when they change.
  let live: readonly string[] = [];
  const livePeers = (): readonly string[] => {
    const nodes = peers();
    if (nodes !== live) {
      live = nodes;
      if (suspects.size > 0) {
        const now = new Set(nodes);
        for (const node of suspects.keys()) if (!now.has(node)) suspects.delete(node);
      }
    }
    return nodes;
  };
  /**
   * How many of `nodes` rank ahead of this one for the job's tick, and how many of those are not
   * suspects (all of them unless `passOver`); the count stops once `enough` are not.
   */
  const countAhead = (nodes: readonly string[], jobId: string, tick: number | undefined, passOver: boolean, enough: number): [ahead: number, unsuspected: number] => {
    const job = hashOf(jobHashes, jobId);
    const mine = weight(job, tick, hashOf(nodeHashes, self));
    let ahead = 0;
    let unsuspected = 0;
    for (const node of nodes) {
      if (node === self || !ranksAhead(node, weight(job, tick, hashOf(nodeHashes, node)), mine)) continue;
      ahead++;
      if (!passOver || !suspects.has(node)) unsuspected++;
      if (unsuspected >= enough) break;
    }
    return [ahead, unsuspected];
  };
  const place = (jobId: string, tick: number | undefined): number => {
    const nodes = livePeers();
    if (nodes.length <= 1) return 0;
    // A grid tick's suspects ranked ahead are passed over by the nodes behind them, but the node
    // ranked first stays first: a suspect's ticks are claimed by the backup, reading first.
    const [ahead, unsuspected] = countAhead(nodes, jobId, tick, tick !== undefined && suspects.size > 0, 2);
    return ahead === 0 ? 0 : Math.max(1, unsuspected);
  };
  /** The live nodes ranked ahead of this one for the job's grid tick, first first. */
  const aheadOf = (jobId: string, tick: number): string[] => {
    const job = hashOf(jobHashes, jobId);
    const mine = weight(job, tick, hashOf(nodeHashes, self));
    const ahead: Array<{ node: string; w: number }> = [];
    for (const node of livePeers()) {
      if (node === self) continue;
      const w = weight(job, tick, hashOf(nodeHashes, node));
      if (ranksAhead(node, w, mine)) ahead.push({ node, w });
    }
    return ahead.sort((p, q) => q.w - p.w || (p.node < q.node ? -1 : 1)).map((a) => a.node);
  };
  return {
    handoffMs,
    place,
    handoffFor(jobId, tick) {
      const nodes = livePeers();
      if (suspects.size === 0) return handoffMs;
      const [ahead, unsuspected] = countAhead(nodes, jobId, tick, true, Infinity);
      if (ahead > 0 && unsuspected === 0) return 0;
      // Passing over a suspect, this node is the backup's backup: the node ranked second, if it
      // lives, claims first, and learns from its own win that the first let the tick pass.
      return ahead >= 2 ? 2 * handoffMs : handoffMs;
    },
    backupAnswered(jobId, tick, claimed) {
      if (!claimed && suspects.size === 0) return undefined;
      const ahead = aheadOf(jobId, tick);
      const first = ahead[0];
      // This node is no longer the tick's backup (the live nodes changed since the claim went out):
      // its answer says nothing of who is first now.
      if (first === undefined || ahead.filter((node) => !suspects.has(node)).length > 1) return undefined;
      if (!claimed) {
        // Found claimed by the node ranked first, unless another node ranked ahead of this one
        // claimed it: that says nothing of which.
        const since = suspects.get(first);
        if (ahead.length === 1 && since !== undefined && tick > since) suspects.delete(first);
        return undefined;
      }
      // Every node ranked ahead let the tick pass. A node is suspected anew only by its own backup
      // (it alone ranks ahead): where two rank ahead, the one not suspected may have claimed
      // before this node, and lost to it only because its claim came late.
      for (const node of ahead) {
        const since = suspects.get(node);
        if (since !== undefined) suspects.set(node, Math.max(since, tick));
      }
      if (ahead.length > 1 || suspects.has(first)) return undefined;
      suspects.set(first, tick);
      return first;
    },
  };
}
