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
 *   now (a server or path that stopped answering); new connections work;
 * - `loseAnswerTo`: let the server run a statement to its end (through its
 *   ReadyForQuery: an autocommit statement has committed by then), then reset
 *   the client's connection instead of delivering the answer, as when the
 *   server or the path dies between a commit and its reply.
 */
export interface TcpProxy {
  readonly port: number;
  /** `url` with its port replaced by the proxy's. */
  via(url: string): string;
  resetAll(): void;
  freezeAll(): void;
  /** Answers lost so far by `loseAnswerTo`, each with the number of rows it carried. */
  readonly lostAnswers: ReadonlyArray<{ rows: number }>;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Called once per connection when its start-up is done; return a promise to hold the answer until it settles, undefined to pass. */
  onStartup?: (backendPid: number) => Promise<void> | undefined;
  /**
   * Statements whose answer is lost (see above), matched on the text the
   * client sends (a simple Query, or the Parse of an extended one: a
   * prepared statement is matched when a connection first prepares it).
   * Up to `times` answers (default 1) in all.
   */
  loseAnswerTo?: { statement: (text: string) => boolean; times?: number };
}

/** Splits a buffer of protocol messages (type byte, then length) into whole messages; returns the rest. */
function messages(buf: Buffer, each: (type: string, body: Buffer) => void): Buffer {
  while (buf.length >= 5) {
    const len = buf.readInt32BE(1);
    if (buf.length < 1 + len) break;
    each(String.fromCharCode(buf[0]!), buf.subarray(5, 1 + len));
    buf = buf.subarray(1 + len);
  }
  return buf;
}

/** The statement text of a Query ('Q': text) or Parse ('P': name, text, ...) message. */
function statementText(type: string, body: Buffer): string | undefined {
  if (type === "Q") return body.toString("utf8", 0, body.indexOf(0));
  if (type !== "P") return undefined;
  const nameEnd = body.indexOf(0);
  return body.toString("utf8", nameEnd + 1, body.indexOf(0, nameEnd + 1));
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  frozen: boolean;
}

export async function startTcpProxy(target: { host: string; port: number }, opts: TcpProxyOptions = {}): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  const lostAnswers: Array<{ rows: number }> = [];
  /** Answers being lost or lost, on every connection: `times` bounds this one. */
  let losses = 0;
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
    // Client -> server: the startup packet has no type byte; typed messages follow it.
    let clientBuf: Buffer = Buffer.alloc(0);
    let clientStarted = false;
    /** A statement whose answer is to be lost was sent: its answer is being swallowed, with this many rows so far. */
    let losing: { rows: number } | undefined;
    let serverBuf: Buffer = Buffer.alloc(0);
    const lose = opts.loseAnswerTo;
    client.on("data", (d) => {
      upstream.write(d);
      if (!lose || losing || losses >= (lose.times ?? 1)) return;
      clientBuf = Buffer.concat([clientBuf, d]);
      if (!clientStarted) {
        if (clientBuf.length < 8) return;
        const len = clientBuf.readInt32BE(0);
        if (clientBuf.length < len) return;
        // An SSLRequest (80877103) is answered with one byte and followed by the real startup packet.
        clientStarted = clientBuf.readInt32BE(4) !== 80877103;
        clientBuf = clientBuf.subarray(len);
        if (!clientStarted) return;
      }
      clientBuf = messages(clientBuf, (type, body) => {
        const text = statementText(type, body);
        if (losing || losses >= (lose.times ?? 1) || text === undefined || !lose.statement(text)) return;
        losing = { rows: 0 };
        losses++;
      });
    });
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
      if (losing) {
        // Everything up to the statement's ReadyForQuery is swallowed; then the client's connection is reset.
        serverBuf = messages(Buffer.concat([serverBuf, d]), (type) => {
          if (!losing) return;
          if (type === "D") losing.rows++;
          if (type === "Z") {
            lostAnswers.push(losing);
            losing = undefined;
            client.resetAndDestroy();
            upstream.destroy();
          }
        });
        return;
      }
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
    lostAnswers,
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
