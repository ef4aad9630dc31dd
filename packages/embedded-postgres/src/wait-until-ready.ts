import pg from "pg";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Resolves once `url` answers `SELECT 1`. "Started" for the caller means
 * "accepts queries": the postmaster needs a moment after spawn to replay WAL
 * and open its socket, and a crash-recovery start can take longer.
 *
 * Rejects after `timeoutMs`, or as soon as `exited` settles (no point in
 * polling a server that is gone, even mid-probe).
 */
export async function waitUntilReady(url: string, timeoutMs: number, exited: Promise<unknown>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const gone = exited.then(() => "gone" as const);
  let lastError: unknown;
  while (performance.now() < deadline) {
    const outcome = await Promise.race([probe(url), gone]);
    if (outcome === "ready") return;
    if (outcome === "gone") throw new Error(`postgres exited during start${detail(lastError)}`);
    lastError = outcome.error;
    await Promise.race([sleep(25), gone]);
  }
  throw new Error(`not ready after ${timeoutMs} ms${detail(lastError)}`);
}

async function probe(url: string): Promise<"ready" | { error: unknown }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on("error", () => {}); // a server dying mid-probe must not crash us
  try {
    await client.connect();
    await client.query("SELECT 1");
    return "ready";
  } catch (error) {
    return { error };
  } finally {
    await client.end().catch(() => {});
  }
}

function detail(err: unknown): string {
  return err instanceof Error ? ` (last attempt: ${err.message})` : "";
}
