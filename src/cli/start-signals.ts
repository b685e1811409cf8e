/**
 * The stop signals of `leasehold start` while the node is still starting.
 * @module
 */
import type { Logger } from '../logger.js';

/** The signals that stop a node. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** What came while the node was starting; see {@link watchStartSignals}. */
export interface StartSignals {
  /** The first stop signal that came, if any. */
  readonly received: NodeJS.Signals | undefined;
  /** Stops listening (a start that ends here). */
  end(): void;
  /**
   * Hands the signals to the running node's `handler`, and gives it the one that came while
   * starting, if any. The handler listens before this stops: Node closes a signal's handle when
   * its last listener goes, and a signal that has come but is not yet dispatched goes with it
   * (the node would then run on, deaf to the SIGTERM it was sent).
   */
  handOver(handler: (signal: NodeJS.Signals) => void): void;
}

/**
 * Listens for SIGTERM and SIGINT while the node starts (its jobs module loading, its private
 * Redis starting, Redis connecting, many jobs registering), when the process would otherwise end
 * at once by the signal's default action. The first is kept and the start stops at its next
 * step, exit 0; a second exits at once, 130, as it does once the node runs.
 */
export function watchStartSignals(logger: Logger): StartSignals {
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received !== undefined) {
      logger.warn({ signal }, 'second %s: exiting without waiting', signal);
      process.exit(130);
    }
    received = signal;
    logger.info({ signal }, 'received %s while starting: stopping after the step under way', signal);
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  const end = (): void => {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  };
  return {
    get received() {
      return received;
    },
    end,
    handOver(handler) {
      for (const s of STOP_SIGNALS) process.on(s, handler);
      end();
      if (received !== undefined) handler(received);
    },
  };
}
