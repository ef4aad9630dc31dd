import { fileURLToPath } from "node:url";
import { readServiceManifests, type LoadedManifest } from "@platform/registry";

/**
 * The lab measures the order path, gateway -> checkout -> orders -> pricing,
 * plus the receipts worker and its mailer (orders queues a receipt in each
 * order's transaction, and the receipts-outage scenario takes the mailer
 * down), and nothing else: example services and services added with
 * `npm run new-service` are not started by the lab and not counted in its
 * per-hop numbers, so a scenario's results do not change when the
 * repository grows a service.
 */
export const chainServices = ["gateway", "checkout", "orders", "pricing", "receipts", "mailer"] as const;
export type ChainService = (typeof chainServices)[number];

const repoRoot = fileURLToPath(new URL("../", import.meta.url));

/** The manifests of the chain's services, for `startPlatform({ manifests })`. */
export function chainManifests(): LoadedManifest[] {
  return readServiceManifests(repoRoot).filter((m) => (chainServices as readonly string[]).includes(m.name));
}
