import net from "node:net";

/**
 * A TCP proxy in front of a test PostgreSQL that can break connections in
 * the ways the network and the server do, at moments a test chooses:
 * - `onStartup`: when the server has finished a connection's start-up
 *   (ReadyForQuery), hold what it sent, let the test act on that backend
 *   (e.g. pg_terminate_backend(pid)), and deliver the start-up answer and
 *   everything the server sent afterwards (its FATAL) in one write, so that
 *   the client reads both in one TCP read, as happens when a backend is
 *   terminated right after it was opened;
 * - `resetAll`: reset every client connection (ECONNRESET);
 * - `freezeAll`: stop delivering the server's answers on the connections open
 *   now (a server or path that stopped answering); new connections work.
 */
export interface TcpProxy {
  readonly port: number;
  /** `url` with its port replaced by the proxy's. */
  via(url: string): string;
  resetAll(): void;
  freezeAll(): void;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Called once per connection when its start-up is done; return a promise to hold the answer until it settles, undefined to pass. */
  onStartup?: (backendPid: number) => Promise<void> | undefined;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  frozen: boolean;
}

export async function startTcpProxy(target: { host: string; port: number }, opts: TcpProxyOptions = {}): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair: Pair = { client, upstream, frozen: false };
    pairs.add(pair);
    const done = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", done);
    upstream.on("error", done);
    client.on("close", done);
    client.on("data", (d) => upstream.write(d));
    client.on("end", () => upstream.end());

    // Server -> client: parse messages until the first ReadyForQuery, holding them.
    let held: Buffer[] = [];
    let parseBuf = Buffer.alloc(0);
    let pid = 0;
    let startupDone = false;
    let holding = false;
    let upstreamEnded = false;
    let release: (() => void) | undefined;
    const flush = () => {
      if (held.length > 0) client.write(Buffer.concat(held));
      held = [];
    };
    upstream.on("data", (d) => {
      if (pair.frozen) return;
      if (startupDone && !holding) {
        client.write(d);
        return;
      }
      held.push(d);
      if (startupDone) return;
      parseBuf = Buffer.concat([parseBuf, d]);
      while (parseBuf.length >= 5) {
        const type = String.fromCharCode(parseBuf[0]!);
        const len = parseBuf.readInt32BE(1);
        if (parseBuf.length < 1 + len) break;
        if (type === "K") pid = parseBuf.readInt32BE(5);
        parseBuf = parseBuf.subarray(1 + len);
        if (type === "Z") {
          startupDone = true;
          const hook = opts.onStartup?.(pid);
          if (!hook) {
            flush();
            return;
          }
          holding = true;
          // Deliver once the hook is done and the server has closed (after its FATAL).
          let hookDone = false;
          release = () => {
            if (!hookDone || !upstreamEnded) return;
            holding = false;
            flush();
            client.end();
          };
          hook.then(
            () => {
              hookDone = true;
              release?.();
            },
            () => {
              hookDone = true;
              release?.();
            },
          );
          return;
        }
      }
    });
    upstream.on("end", () => {
      upstreamEnded = true;
      if (pair.frozen) return;
      if (holding) release?.();
      else {
        flush();
        client.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    resetAll() {
      for (const p of [...pairs]) {
        p.client.resetAndDestroy();
        p.upstream.destroy();
      }
    },
    freezeAll() {
      for (const p of pairs) p.frozen = true;
    },
    async close() {
      for (const p of [...pairs]) {
        p.client.destroy();
        p.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
