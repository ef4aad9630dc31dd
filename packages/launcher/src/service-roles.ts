import pg from "pg";

/**
 * Least privilege on the embedded database: each service with a database
 * connects as its own role, which owns its schema and nothing else. The
 * one service cannot read another's tables; none can
 * create objects elsewhere. (In compose, deploy/compose/postgres-init.sh
 * does the same with passwords.) Idempotent: safe at every start.
 */
export async function ensureServiceRoles(
  superuserUrl: string,
  databases: readonly (string | { role: string; schema: string })[],
): Promise<Record<string, string>> {
  // A plain name: a role owning the schema of the same name.
  const wanted = databases.map((d) => (typeof d === "string" ? { role: d, schema: d } : d));
  const client = new pg.Client({ connectionString: superuserUrl });
  // The connection dying (terminated, server stopping) must fail this call, not
  // crash the supervisor with an unhandled 'error' event: the query rejects anyway.
  client.on("error", () => {});
  await client.connect();
  try {
    const db = (await client.query<{ db: string }>("SELECT current_database() AS db")).rows[0]!.db;
    await client.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    for (const { role: name, schema } of wanted) {
      if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`invalid role name ${name}`);
      if (!/^[a-z][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
      await client.query(`DO $$ BEGIN
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${name}') THEN CREATE ROLE ${name} LOGIN; END IF;
        END $$`);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION ${name}`);
      await client.query(`ALTER SCHEMA ${schema} OWNER TO ${name}`);
      await client.query(`REVOKE ALL ON DATABASE ${pg.escapeIdentifier(db)} FROM PUBLIC`);
      await client.query(`GRANT CONNECT ON DATABASE ${pg.escapeIdentifier(db)} TO ${name}`);
    }
  } finally {
    await client.end();
  }
  const url = new URL(superuserUrl);
  return Object.fromEntries(
    wanted.map(({ role: name }) => {
      const u = new URL(url);
      u.username = name;
      u.password = "";
      return [name, u.toString()];
    }),
  );
}
