import { envPrefix, type LoadedManifest } from "../manifest.js";
import { effectiveDependencies, passwordSecret } from "../graph.js";

/**
 * docker-compose.yml's service blocks and secrets. The rest of the file
 * (x-service's healthcheck timing, memory limits, log rotation, networks,
 * the observability and tracing profiles) is written by hand around the
 * marked regions.
 */
export function composeServiceBlocks(manifests: readonly LoadedManifest[]): string {
  return manifests.map((m) => composeService(m, manifests)).join("\n");
}

function composeService(m: LoadedManifest, all: readonly LoadedManifest[]): string {
  const ports = all.find((x) => x.name === m.name)!.ports;
  const deps = effectiveDependencies(m, all);
  const lines = [
    `  ${m.name}:`,
    `    # ${m.description}.`,
    `    <<: *service`,
    `    environment:`,
    `      SERVICE: ${m.name}`,
    `      HOST: 0.0.0.0`,
    `      PORT: "${ports.rpc}"`,
    `      # Empty (the default) exports no spans; the tracing profile's collector is http://otel-collector:4318.`,
    `      OTEL_EXPORTER_OTLP_ENDPOINT: \${OTEL_EXPORTER_OTLP_ENDPOINT:-}`,
    `      ADMIN_PORT: "${ports.admin}"`,
  ];
  if (m.database) {
    lines.push(
      `      # No password in the URL: the service reads it from the secret's file (<VAR>_FILE).`,
      `      DATABASE_URL: postgres://${m.database.role}@postgres:5432/platform`,
      `      DATABASE_PASSWORD_FILE: /run/secrets/${passwordSecret(m.database.role)}`,
    );
  }
  for (const d of deps) {
    const callee = all.find((x) => x.name === d.service)!;
    lines.push(`      ${envPrefix(d.service)}_URL: http://${d.service}:${callee.ports.rpc}`);
  }
  if (m.database) lines.push(`    secrets:`, `      - ${passwordSecret(m.database.role)}`);
  if (m.edge) {
    lines.push(
      `    networks:`,
      `      - internal`,
      `      - edge`,
      `    ports:`,
      `      # The only published port: the public API. ${ports.admin} (metrics, admin) stays internal.`,
      `      - "${ports.rpc}:${ports.rpc}"`,
    );
  } else {
    lines.push(`    expose:`, `      - "${ports.rpc}"`, `      - "${ports.admin}"`);
  }
  const after = [...(m.database ? ["postgres"] : []), ...deps.map((d) => d.service)];
  if (after.length > 0) {
    lines.push(`    depends_on:`);
    for (const a of after) lines.push(`      ${a}:`, `        condition: service_healthy`);
  }
  return `${lines.join("\n")}\n`;
}

/** The postgres container's environment for the init script: one password file per role. */
export function composePostgresSecrets(manifests: readonly LoadedManifest[]): string {
  const roles = manifests.flatMap((m) => (m.database ? [m.database.role] : []));
  const lines = [
    `    environment:`,
    `      POSTGRES_USER: platform`,
    `      POSTGRES_DB: platform`,
    `      POSTGRES_PASSWORD_FILE: /run/secrets/postgres_password`,
  ];
  for (const r of roles) lines.push(`      ${envPrefix(r)}_DB_PASSWORD_FILE: /run/secrets/${passwordSecret(r)}`);
  lines.push(`    secrets:`, `      - postgres_password`);
  for (const r of roles) lines.push(`      - ${passwordSecret(r)}`);
  return `${lines.join("\n")}\n`;
}

/** The top-level `secrets:`: files in SECRETS_DIR (default ./secrets, git-ignored). */
export function composeSecrets(manifests: readonly LoadedManifest[]): string {
  const names = ["postgres_password", ...manifests.flatMap((m) => (m.database ? [passwordSecret(m.database.role)] : []))];
  return `${["secrets:", ...names.flatMap((n) => [`  ${n}:`, `    file: \${SECRETS_DIR:-./secrets}/${n}`])].join("\n")}\n`;
}
