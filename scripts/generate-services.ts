/**
 * `npm run generate:services` (also part of `npm run generate`): every
 * artifact that lists services, from services/<name>/service.json
 * (packages/registry/src/generate). `--check` writes nothing and fails when
 * a committed artifact is stale.
 *
 *   npm run generate:services
 *   npm run generate:services -- --check
 */
import { generateServiceArtifacts, staleServiceArtifacts } from "@platform/registry/generate";

const root = process.cwd();
try {
  if (process.argv.includes("--check")) {
    const stale = staleServiceArtifacts(root);
    if (stale.length > 0) {
      process.stderr.write(`[generate:services] stale (run npm run generate:services):\n  ${stale.join("\n  ")}\n`);
      process.exit(1);
    }
    process.stdout.write("[generate:services] every artifact is up to date\n");
  } else {
    const written = generateServiceArtifacts(root);
    process.stdout.write(written.length === 0 ? "[generate:services] nothing changed\n" : `[generate:services] wrote\n  ${written.join("\n  ")}\n`);
  }
} catch (e) {
  process.stderr.write(`[generate:services] ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
