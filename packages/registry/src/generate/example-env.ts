import type { LoadedManifest } from "../manifest.js";
import { passwordSecret } from "../graph.js";
import { hashHeader } from "./header.js";

/** deploy/compose/example.env: what compose reads from .env, and the secret files it needs. */
export function exampleEnv(manifests: readonly LoadedManifest[]): string {
  const files = ["postgres_password", ...manifests.flatMap((m) => (m.database ? [passwordSecret(m.database.role)] : []))];
  return [
    hashHeader(
      "Copy to .env next to docker-compose.yml. .env is git-ignored.",
      "",
      "Passwords are never variables: compose mounts each as a secret file from",
      "SECRETS_DIR (./secrets is git-ignored), one per database role. Create them once:",
      "  mkdir -p secrets",
      `  for f in ${files.join(" ")}; do`,
      "    openssl rand -hex 24 > secrets/$f",
      "  done",
      "  chmod 0644 secrets/*   # the services run as uid 1000 and read them",
    ).trimEnd(),
    "SECRETS_DIR=./secrets",
    "# Empty: no spans exported. With the tracing profile: http://otel-collector:4318",
    "OTEL_EXPORTER_OTLP_ENDPOINT=",
    "",
  ].join("\n");
}
