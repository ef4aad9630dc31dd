import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { planDatabasePools, readPostgresServers } from "../database-budget.js";
import type { LoadedManifest } from "../manifest.js";
import { readServiceManifests } from "../read-manifests.js";
import { composePostgresSecrets, composeSecrets, composeServiceBlocks } from "./compose.js";
import { composeTlsOverlay } from "./compose-tls.js";
import { exampleEnv } from "./example-env.js";
import { forwardedApisModule } from "./forwarded-apis.js";
import { generatedNotice, replaceRegion, type Artifact } from "./header.js";
import { baseKustomization, kubernetesService, networkPolicies, productionReplicaPatches } from "./kubernetes.js";
import { launcherServiceNames } from "./launcher-names.js";
import { postgresInit } from "./postgres-init.js";
import { prometheusTargets } from "./prometheus.js";
import { protoIndex } from "./proto-index.js";

export { generatedNotice, type Artifact } from "./header.js";

/**
 * Every artifact that lists services, as generated from the manifests:
 * whole files, and the marked regions of files otherwise written by hand
 * (docker-compose.yml, observability/prometheus.yml, the production
 * overlay). Nothing is written: see generateServiceArtifacts.
 */
export function renderServiceArtifacts(root: string, manifests: readonly LoadedManifest[] = readServiceManifests(root)): Artifact[] {
  const read = (path: string) => readFileSync(join(root, path), "utf8");
  const regions = (path: string, fills: [string, string][]) => ({
    path,
    content: fills.reduce((text, [region, body]) => replaceRegion(text, path, region, body), read(path)),
  });
  // Deployments list the deployed services; npm start runs every one (the examples too).
  const all = manifests;
  manifests = manifests.filter((m) => m.deploy);
  const edgeTemplate = read("deploy/k8s/templates/edge.yaml");
  const backendTemplate = read("deploy/k8s/templates/backend.yaml");
  // Throws, naming the services and numbers, when they need more connections than a server allows.
  const pools = planDatabasePools(manifests, readPostgresServers(root));
  return [
    regions("docker-compose.yml", [
      ["postgres", composePostgresSecrets(manifests)],
      ["services", composeServiceBlocks(manifests)],
      ["secrets", composeSecrets(manifests)],
    ]),
    { path: "deploy/compose/postgres-init.sh", content: postgresInit(manifests) },
    { path: "deploy/compose/tls.yml", content: composeTlsOverlay(manifests) },
    { path: "deploy/compose/example.env", content: exampleEnv(manifests) },
    regions("observability/prometheus.yml", [["targets", prometheusTargets(manifests)]]),
    { path: "deploy/k8s/base/kustomization.yaml", content: baseKustomization(manifests) },
    { path: "deploy/k8s/base/network-policies.yaml", content: networkPolicies(manifests) },
    ...manifests.map((m) => ({
      path: `deploy/k8s/base/${m.name}.yaml`,
      content: kubernetesService(m, manifests, m.edge ? edgeTemplate : backendTemplate, pools),
    })),
    regions("deploy/k8s/overlays/production/kustomization.yaml", [["replicas", productionReplicaPatches(manifests, pools)]]),
    ...manifests
      .filter((m) => m.edge)
      .map((edge) => ({ path: `services/${edge.name}/src/forwarded-apis.generated.ts`, content: forwardedApisModule(manifests) })),
    { path: "packages/launcher/src/service-names.generated.ts", content: launcherServiceNames(all) },
    // Not from the manifests but from proto/: the api names they list resolve through it.
    { path: "packages/proto/src/index.ts", content: protoIndex(root) },
  ];
}

/**
 * `npm run generate:services`: writes every artifact whose content changed
 * and returns the paths written. `npm run new-service` calls this after
 * writing a service.json.
 */
export function generateServiceArtifacts(root: string): string[] {
  const written: string[] = [];
  const artifacts = renderServiceArtifacts(root);
  for (const path of orphans(root, artifacts)) {
    rmSync(join(root, path));
    written.push(path);
  }
  for (const a of artifacts) {
    const path = join(root, a.path);
    if (existsSync(path) && readFileSync(path, "utf8") === a.content) continue;
    writeFileSync(path, a.content);
    written.push(a.path);
  }
  return written;
}

/** The artifacts whose committed content differs from what the manifests generate (the staleness test). */
export function staleServiceArtifacts(root: string): string[] {
  const artifacts = renderServiceArtifacts(root);
  return [
    ...orphans(root, artifacts),
    ...artifacts.filter((a) => !existsSync(join(root, a.path)) || readFileSync(join(root, a.path), "utf8") !== a.content).map((a) => a.path),
  ];
}

/**
 * Generated per-service files that nothing generates any more: a service
 * removed, renamed or no longer deployed leaves its Kubernetes file behind
 * otherwise, and kustomize would not notice (the base no longer lists it).
 */
function orphans(root: string, artifacts: readonly Artifact[]): string[] {
  const dir = "deploy/k8s/base";
  if (!existsSync(join(root, dir))) return [];
  const rendered = new Set(artifacts.map((a) => a.path));
  return readdirSync(join(root, dir))
    .map((f) => `${dir}/${f}`)
    .filter((path) => path.endsWith(".yaml") && !rendered.has(path) && readFileSync(join(root, path), "utf8").includes(generatedNotice));
}
