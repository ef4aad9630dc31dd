import { ConfigError } from "./config.js";
import type { Logger } from "pino";

/**
 * Says loudly when a dependency the platform patches (patches/README.md)
 * runs without its patch, as it does when it was installed with
 * --ignore-scripts, pnpm, yarn or bun (patch-package runs from npm's
 * postinstall only), or when a new release moved the patched lines.
 * `problems` names what is missing; none: nothing to say.
 *
 * In production (NODE_ENV=production, as the image sets) the service refuses
 * to start (exit 78, like any configuration error: a restart cannot fix it).
 * Elsewhere it logs an error and serves: a developer who installed with
 * another package manager can still try the platform, and the tests that
 * depend on the patch fail with the same message.
 */
export function reportUnpatched(dependency: string, problems: string[], logger: Logger, env: Record<string, string | undefined> = process.env): void {
  if (problems.length === 0) return;
  const message =
    `${dependency} is not patched (patches/README.md): ` +
    problems.join("; ") +
    ". Install with `npm ci` (which runs patch-package), or run `npx patch-package` after installing with another tool.";
  if (env["NODE_ENV"] === "production") throw new ConfigError([message]);
  logger.error({ problems }, message);
}
