import { Code, ConnectError } from "@connectrpc/connect";
import pg from "pg";

/** The channel the receipts' trigger notifies on, with the order's id (receipts migration 005). */
export const receiptChangesChannel = "receipt_changes";

/** How the feed's connection names itself in pg_stat_activity (the tests count it there). */
export const changeFeedApplicationName = "orders-change-feed";

/** One watcher's view of the feed: told when its order changed. */
export interface ChangeSubscription {
  /**
   * Resolves once a change of the order was notified since the last call
   * (at once when one already was); rejects when `signal` aborts or the
   * feed lost its connection (a change may then have gone unnoticed).
   */
  changed(signal: AbortSignal): Promise<void>;
  /** Leaves the feed; the last watcher to leave closes its connection. */
  close(): void;
}

interface FeedLogger {
  info(o: object, m: string): void;
  warn(o: object, m: string): void;
}

/**
 * Changes of orders, learnt from PostgreSQL with LISTEN/NOTIFY on ONE
 * connection per process, shared by every watcher: a watcher costs a map
 * entry here, never a connection of the pool (which serves the unary calls
 * and must not be held for minutes). The connection is opened by the first
 * watcher and closed when the last leaves, so an idle process holds none.
 * Notifications are wake-ups only: a watcher reads the order after each, so
 * a burst of them costs one read, and nothing depends on a payload arriving.
 */
export class OrderChangeFeed {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private readonly watchers = new Map<string, Set<Watcher>>();
  private count = 0;

  constructor(
    private readonly connectionString: string,
    private readonly logger: FeedLogger,
  ) {}

  /** Watchers now; and whether the feed's connection is open. */
  stats(): { watchers: number; listening: boolean } {
    return { watchers: this.count, listening: this.client !== undefined };
  }

  /**
   * Subscribes to the changes of `orderId`, listening before it returns:
   * read the order after this, and no change committed after that read is
   * missed.
   */
  async subscribe(orderId: string): Promise<ChangeSubscription> {
    const watcher = new Watcher();
    const set = this.watchers.get(orderId) ?? new Set<Watcher>();
    this.watchers.set(orderId, set);
    set.add(watcher);
    this.count++;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      set.delete(watcher);
      if (set.size === 0) this.watchers.delete(orderId);
      if (--this.count === 0) this.stopListening();
    };
    try {
      await this.listening();
    } catch (e) {
      close();
      throw new ConnectError(`order changes cannot be followed: ${(e as Error).message}`, Code.Unavailable);
    }
    return { changed: (signal) => watcher.changed(signal), close };
  }

  /** Closes the connection whatever is watching (shutdown: every stream has ended by then). */
  async close(): Promise<void> {
    await this.connecting?.catch(() => {});
    this.stopListening();
  }

  private listening(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.connectionString, application_name: changeFeedApplicationName });
      client.on("notification", (n) => {
        if (n.channel !== receiptChangesChannel || n.payload === undefined) return;
        for (const w of this.watchers.get(n.payload) ?? []) w.notify();
      });
      client.on("error", (e) => this.lost(client, e));
      await client.connect();
      await client.query(`LISTEN ${receiptChangesChannel}`);
      // Every watcher may have left while this connected.
      if (this.count === 0) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
      this.logger.info({ channel: receiptChangesChannel }, "order change feed listening");
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private stopListening(): void {
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    // Closing the session ends its LISTEN: nothing of it stays in PostgreSQL.
    client.end().catch(() => {});
    this.logger.info({}, "order change feed closed: nobody watches");
  }

  /** The connection died: a change may have gone by unseen, so every watcher ends (its caller resumes). */
  private lost(client: pg.Client, e: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    this.logger.warn({ err: e.message, watchers: this.count }, "order change feed lost its connection; ending every watch");
    const error = new ConnectError(
      "order changes cannot be followed: the database connection was lost; resume after the last position received",
      Code.Unavailable,
    );
    for (const set of this.watchers.values()) for (const w of set) w.fail(error);
  }
}

/** One watcher: a flag set by notifications, and the wait for it. */
class Watcher {
  private notified = false;
  private failure: ConnectError | undefined;
  private wake: (() => void) | undefined;

  notify(): void {
    this.notified = true;
    this.wake?.();
  }

  fail(error: ConnectError): void {
    this.failure = error;
    this.wake?.();
  }

  changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const settle = () => {
        signal.removeEventListener("abort", settle);
        this.wake = undefined;
        if (this.failure) return reject(this.failure);
        if (signal.aborted) return reject(ConnectError.from(signal.reason, Code.Canceled));
        this.notified = false;
        resolve();
      };
      if (this.notified || this.failure || signal.aborted) return settle();
      this.wake = settle;
      signal.addEventListener("abort", settle, { once: true });
    });
  }
}
