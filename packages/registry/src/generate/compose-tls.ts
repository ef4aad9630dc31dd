import { effectiveDependencies } from "../graph.js";
import { envPrefix, type LoadedManifest } from "../manifest.js";
import { hashHeader } from "./header.js";

/**
 * deploy/compose/tls.yml: an override of docker-compose.yml that turns on
 * transport security. The gateway serves TLS on its published port; every
 * hop inside is mutual TLS (https:// dependency URLs, each server accepting
 * only the callers the manifests name). Each service mounts its own
 * directory of TLS_DIR, read-only: its certificate, its key and the CA,
 * nothing of another service's; a directory, not files, so that a renewed
 * certificate moved into place is seen and reloaded.
 */
export function composeTlsOverlay(manifests: readonly LoadedManifest[]): string {
  const lines = [
    hashHeader(
      "Transport security for docker-compose.yml (docs/security.md):",
      "  docker compose -f docker-compose.yml -f deploy/compose/tls.yml up --build",
      "TLS_DIR (default ./tls, git-ignored) holds one directory per service, <service>/tls.crt,",
      "<service>/tls.key (readable by uid 1000) and <service>/ca.crt; docs/security.md makes them with openssl.",
      "Each certificate names its service (CN or DNS name): the name the servers check callers by.",
    ).trimEnd(),
    "services:",
  ];
  for (const m of manifests) {
    lines.push(
      `  ${m.name}:`,
      `    environment:`,
      `      TLS_CERT_FILE: /run/tls/tls.crt`,
      `      TLS_KEY_FILE: /run/tls/tls.key`,
      `      TLS_CA_FILE: /run/tls/ca.crt`,
    );
    for (const d of effectiveDependencies(m, manifests)) {
      const callee = manifests.find((x) => x.name === d.service)!;
      lines.push(`      ${envPrefix(d.service)}_URL: https://${d.service}:${callee.ports.rpc}`);
    }
    lines.push(`    volumes:`, `      - \${TLS_DIR:-./tls}/${m.name}:/run/tls:ro`);
  }
  return `${lines.join("\n")}\n`;
}
