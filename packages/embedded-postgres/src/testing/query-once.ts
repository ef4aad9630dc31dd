import pg from "pg";

/** One statement on a connection of its own, closed whatever the outcome: what a spec needs to look inside a cluster. */
export async function queryOnce(url: string, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}
