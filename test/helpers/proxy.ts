/**
 * A TCP relay on loopback in front of a server, with two ways to disturb it: new connections
 * held unanswered (those open go on), and answers held back (the requests reach the server at
 * once, the replies come back late, in order). What a node sees when a node of a Cluster stops
 * accepting, when its event loop reads an answer late, or when the way back is slow.
 * @module
 */
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';

/** A running {@link startRelay}. */
export interface Relay {
  /** The loopback port it listens on. */
  readonly port: number;
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** From now on, new connections are held unanswered; those open go on. */
  holdNew(): void;
  /** Holds back every reply that arrives from now on by `ms` (0: none); replies keep their order. */
  delayReplies(ms: number): void;
  /** Ends every connection and stops listening. */
  close(): Promise<void>;
}

/** Starts a relay to `127.0.0.1:<targetPort>`. */
export async function startRelay(targetPort: number): Promise<Relay> {
  let hold = false;
  let delayMs = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => client.destroy());
    if (hold) return;
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(upstream);
    client.pipe(upstream);
    // Each reply chunk leaves at its due time, never before the one ahead of it.
    const queue: Array<{ at: number; chunk: Buffer }> = [];
    let timer: NodeJS.Timeout | undefined;
    const drain = (): void => {
      timer = undefined;
      while (queue.length > 0 && (queue[0]?.at ?? 0) <= Date.now()) client.write(queue.shift()?.chunk ?? Buffer.alloc(0));
      if (queue.length > 0) timer = setTimeout(drain, (queue[0]?.at ?? 0) - Date.now());
    };
    upstream.on('data', (chunk: Buffer) => {
      queue.push({ at: Date.now() + delayMs, chunk });
      if (timer === undefined) drain();
    });
    const end = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    holdNew() {
      hold = true;
    },
    delayReplies(ms) {
      delayMs = ms;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
