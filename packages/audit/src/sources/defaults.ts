import { readServiceManifests } from "@platform/registry";
import type { Target } from "../model.js";
import { buildTarget, secretPlaceholder } from "./build-target.js";

/**
 * The code defaults, as `npm start` runs them: every service with a
 * manifest (services/<name>/service.json) with nothing
 * set but the database address it hands out (ports and URLs it sets are
 * the defaults themselves).
 */
export function defaultsTarget(): Promise<Target> {
  const names = readServiceManifests().map((m) => m.name);
  return buildTarget(
    "defaults",
    "each service's config.ts defaults (what npm start runs)",
    names.map((name) => ({ name, where: `services/${name}`, env: { DATABASE_URL: { value: secretPlaceholder("DATABASE_URL"), source: "npm start" } } })),
  );
}
