/**
 * The plain chain's own database on the platform's PostgreSQL server: the
 * same roles, schemas, migrations and demo catalogue as the platform's
 * (services/{pricing,orders,receipts}/migrations), so that the plain
 * services run the platform's SQL text unchanged, and the plain receipts
 * relay has an outbox of its own (the platform's receipts relay never sees
 * a plain order's receipt, nor the other way round).
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { migrate } from "@platform/database";
import { ensureServiceRoles } from "@platform/launcher";
import pg from "pg";

export const plainDatabaseName = "plain_chain";
/** Schemas in the order their migrations must run (receipts' enqueue_receipt is bound lazily, so order is free; kept as the platform starts). */
const schemas = ["pricing", "orders", "receipts"] as const;
export type PlainSchema = (typeof schemas)[number];

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** The plain chain's database, with the credentials of `serverUrl` (the platform's superuser URL). */
export function plainDatabaseUrl(serverUrl: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${plainDatabaseName}`;
  return u.toString();
}

/** Creates (once) and migrates the plain chain's database; returns each schema's role URL on it. */
export async function preparePlainDatabase(superuserUrl: string): Promise<Record<PlainSchema, string>> {
  const admin = new pg.Client({ connectionString: superuserUrl });
  admin.on("error", () => {});
  await admin.connect();
  try {
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [plainDatabaseName]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${plainDatabaseName}`);
  } finally {
    await admin.end();
  }
  const plainUrl = plainDatabaseUrl(superuserUrl);
  const roleUrls = (await ensureServiceRoles(plainUrl, schemas)) as Record<PlainSchema, string>;
  for (const schema of schemas) {
    await migrate(roleUrls[schema], { schema, directory: `${repoRoot}services/${schema}/migrations` });
  }
  // What services/receipts' openInterface grants at start.
  await asRole(roleUrls.receipts, async (c) => {
    await c.query("GRANT USAGE ON SCHEMA receipts TO orders");
    await c.query("GRANT EXECUTE ON FUNCTION receipts.enqueue_receipt(uuid), receipts.receipt_status(uuid) TO orders");
  });
  const catalogue = await readFile(`${repoRoot}services/pricing/seed/demo-catalogue.sql`, "utf8");
  await asRole(roleUrls.pricing, (c) => c.query(catalogue));
  return roleUrls;
}

async function asRole(url: string, fn: (c: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end();
  }
}
