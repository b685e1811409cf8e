/**
 * Cancel requests across the cluster: the node asked publishes `cancel` with a request id on
 * the control channel, and gathers the answers of the nodes that aborted a run of the job
 * for a short while.
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Timers } from '../clock.js';

/** How long a node asked to cancel waits for the others' answers, ms. */
export const CANCEL_ANSWER_MS = 750;

/** Open cancel requests and their answers. */
export class CancelRequests {
  private readonly open_ = new Map<string, string[]>();

  constructor(private readonly clock: Timers) {}

  /** Opens a request: its id, and the instances that answered once the wait is over. */
  open(): { requestId: string; answers: Promise<string[]> } {
    const requestId = randomUUID();
    const got: string[] = [];
    this.open_.set(requestId, got);
    const answers = new Promise<string[]>((resolve) => {
      this.clock.setTimer(
        () => {
          this.open_.delete(requestId);
          resolve(got);
        },
        CANCEL_ANSWER_MS,
        true,
      );
    });
    return { requestId, answers };
  }

  /** A node answered that it cancelled a run for the request. */
  answer(requestId: string, instanceId: string): void {
    this.open_.get(requestId)?.push(instanceId);
  }
}
