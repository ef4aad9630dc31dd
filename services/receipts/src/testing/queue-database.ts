import { fileURLToPath } from "node:url";
import { migrate } from "@platform/database";
import { runMigrations } from "graphile-worker";
import pg from "pg";
import { startTestServer, type TestServer } from "../../../../packages/database/src/testing/test-server.js";

const migrations = fileURLToPath(new URL("../../migrations", import.meta.url));

/** A real PostgreSQL for one spec file, with the receipts schema and graphile-worker's own migrations in it. */
export async function startQueueDatabase(): Promise<TestServer> {
  const server = await startTestServer();
  await migrate(server.url, { schema: "receipts", directory: migrations });
  const pool = new pg.Pool({ connectionString: server.url, max: 1 });
  try {
    await runMigrations({ pgPool: pool, schema: "receipts" });
  } finally {
    await pool.end();
  }
  return server;
}
