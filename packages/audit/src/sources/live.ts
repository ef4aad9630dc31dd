import type { EffectiveConfig } from "@platform/runtime";
import type { Target } from "../model.js";
import { configFile } from "../service-modules.js";

/**
 * Running services: each operator port's GET /admin/config (the
 * configuration the process loaded and the clients it wired, redacted).
 */
export async function liveTarget(adminUrls: string[]): Promise<Target> {
  const target: Target = { name: "live", origin: adminUrls.join(" "), services: [], refused: [] };
  for (const raw of adminUrls) {
    const base = raw.replace(/\/+$/, "");
    let res: Response;
    try {
      res = await fetch(`${base}/admin/config`, { signal: AbortSignal.timeout(5000) });
    } catch (e) {
      throw new Error(`${base}/admin/config: not reachable (${e instanceof Error ? e.message : String(e)}); pass each service's operator port (ADMIN_PORT)`);
    }
    if (!res.ok) throw new Error(`${base}/admin/config answered ${res.status}: is this a service's operator port (ADMIN_PORT)?`);
    const body = (await res.json()) as EffectiveConfig;
    // Only an edge with the controller on answers; elsewhere 404.
    const intake = await fetch(`${base}/admin/intake`, { signal: AbortSignal.timeout(5000) });
    const intakeNow = intake.ok ? ((await intake.json()) as { state: string; admitFraction: number }) : undefined;
    target.services.push({
      name: body.service,
      config: body.config,
      wired: body.dependencyClients,
      plugins: body.plugins ?? [],
      env: {},
      defaultsFile: configFile(body.service),
      adminUrl: base,
      ...(intakeNow ? { intakeNow } : {}),
    });
  }
  return target;
}
