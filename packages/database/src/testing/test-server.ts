import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type EmbeddedPostgres, startEmbeddedPostgres, testClusterTemplates } from "@platform/embedded-postgres";
import pg from "pg";

/** A real PostgreSQL in a temp dir, for one test file. */
export interface TestServer {
  server: EmbeddedPostgres;
  readonly url: string;
  /** Stops the server, keeping its data (for restart tests). */
  stop(): Promise<void>;
  /** Starts it again on the same data dir and port. */
  restart(): Promise<void>;
  /** Stops it and deletes its data. */
  destroy(): Promise<void>;
}

export async function startTestServer(): Promise<TestServer> {
  const root = mkdtempSync(join(tmpdir(), "database-test-"));
  // When tests run as root, postgres runs as another user that must traverse this.
  chmodSync(root, 0o755);
  const dataDir = join(root, "data");
  // Copied from the tests' cluster template: a fifth of initdb's CPU (cluster-template.ts).
  let server = await startEmbeddedPostgres({ dataDir, templates: testClusterTemplates });
  const t: TestServer = {
    get server() {
      return server;
    },
    get url() {
      return server.url;
    },
    stop: () => server.stop(),
    async restart() {
      server = await startEmbeddedPostgres({ dataDir, port: server.port });
    },
    async destroy() {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return t;
}

/** One query on a fresh connection, outside any pool under test. */
export async function adminQuery<R extends pg.QueryResultRow>(url: string, text: string, values?: unknown[]): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Polls `check` until it returns true; false after `timeoutMs`. Bounded, so a broken invariant fails instead of hanging. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (performance.now() < until) {
    if (await check()) return true;
    await sleep(20);
  }
  return check();
}

/** Statements of one application currently running on the server. */
export async function activeStatements(url: string, applicationName: string): Promise<string[]> {
  const rows = await adminQuery<{ query: string }>(
    url,
    "SELECT query FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid()",
    [applicationName],
  );
  return rows.map((r) => r.query);
}
