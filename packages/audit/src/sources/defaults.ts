import { discoverServices, serviceNames } from "@platform/launcher";
import type { Target } from "../model.js";
import { buildTarget, secretPlaceholder } from "./build-target.js";

/**
 * The code defaults, as `npm start` runs them: the launcher's services
 * (the four, plus every service `npm run new-service` added) with nothing
 * set but the database address it hands out (ports and URLs it sets are
 * the defaults themselves).
 */
export function defaultsTarget(): Promise<Target> {
  const names = [...serviceNames, ...discoverServices().map((s) => s.name)];
  return buildTarget(
    "defaults",
    "each service's config.ts defaults (what npm start runs)",
    names.map((name) => ({ name, where: `services/${name}`, env: { DATABASE_URL: { value: secretPlaceholder("DATABASE_URL"), source: "npm start" } } })),
  );
}
