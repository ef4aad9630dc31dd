import { envPrefix, type LoadedManifest } from "../manifest.js";
import { hashHeader } from "./header.js";

/**
 * deploy/compose/postgres-init.sh: one login role per service with a
 * database, owning its own schema and nothing else. Each password is read
 * from the file its `<ROLE>_DB_PASSWORD_FILE` names (a compose secret).
 */
export function postgresInit(manifests: readonly LoadedManifest[]): string {
  const dbs = manifests.flatMap((m) => (m.database ? [m.database] : []));
  const vars = dbs.map((d) => `-v ${d.role}_pw="$(cat "$${envPrefix(d.role)}_DB_PASSWORD_FILE")"`);
  const sql = [
    "REVOKE CREATE ON SCHEMA public FROM PUBLIC;",
    'REVOKE ALL ON DATABASE :"db" FROM PUBLIC;',
    ...dbs.map((d) => `CREATE ROLE ${d.role} LOGIN PASSWORD :'${d.role}_pw';`),
    ...dbs.map((d) => `CREATE SCHEMA ${d.schema} AUTHORIZATION ${d.role};`),
    ...(dbs.length > 0 ? [`GRANT CONNECT ON DATABASE :"db" TO ${dbs.map((d) => d.role).join(", ")};`] : []),
  ];
  return [
    "#!/bin/sh",
    hashHeader(
      "Runs once, when the postgres container initialises an empty volume.",
      "Least privilege: each service gets its own login role that owns its own",
      "schema and nothing else. Passwords come from secret files (compose",
      '`secrets:`, see README "Deploy with docker compose"); none is stored in',
      "the repository or in an environment variable.",
    ).trimEnd(),
    "set -eu",
    `psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \\`,
    `  ${[...vars, '-v db="$POSTGRES_DB"'].join(" ")} <<'SQL'`,
    ...sql,
    "SQL",
    "",
  ].join("\n");
}
