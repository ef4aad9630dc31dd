import { envPrefix, type LoadedManifest } from "../manifest.js";
import { callersOf, effectiveDependencies } from "../graph.js";
import { hashHeader } from "./header.js";
import { postgresServersFile, type PoolPlan } from "../database-budget.js";

/** Where a service's database URL is mounted from the platform-database Secret. */
export const databaseSecretDir = "/var/run/secrets/platform-database";

/**
 * deploy/k8s/base/<name>.yaml from deploy/k8s/templates/{edge,backend}.yaml:
 * the template's tokens replaced, its `#@env`, `#@volumeMounts` and
 * `#@volumes` lines replaced by what the manifest says (dependency URLs,
 * each naming the callee's headless Service,
 * the database URL as a file from the platform-database Secret, literal
 * settings from "kubernetes.env").
 */
export function kubernetesService(m: LoadedManifest, all: readonly LoadedManifest[], template: string, pools: PoolPlan): string {
  // `#!` lines document the template itself; every other line is the output.
  const body = template.replace(/^#!.*\n/gm, "");
  const env: string[] = [];
  for (const d of effectiveDependencies(m, all)) {
    const callee = all.find((x) => x.name === d.service)!;
    env.push(`- name: ${envPrefix(d.service)}_URL`, `  value: http://${headlessServiceName(d.service)}:${callee.ports.rpc}`);
  }
  const mounts: string[] = [];
  const volumes: string[] = [];
  if (m.database) {
    env.push(
      `# A file from the platform-database Secret (key ${m.name}-url), never a`,
      `# literal or a variable: it holds the password. Create the Secret first`,
      `# (docs/kubernetes.md).`,
      `- name: DATABASE_URL_FILE`,
      `  value: ${databaseSecretDir}/url`,
    );
    // The manifest's kubernetes.env may set its own (a worker with a pool of its own, docs/outbox.md).
    if (m.kubernetes.env["DB_POOL_MAX"] === undefined) {
      env.push(
        `# Per process: (maxReplicas + maxSurge) x DB_POOL_MAX connections at`,
        `# most, over every service with a database within max_connections: this`,
        `# service's share of ${postgresServersFile} (docs/scaling.md).`,
        `- name: DB_POOL_MAX`,
        `  value: "${pools.pools[m.name]}"`,
      );
    }
    mounts.push(`- name: database`, `  mountPath: ${databaseSecretDir}`, `  readOnly: true`);
    volumes.push(`- name: database`, `  secret:`, `    secretName: platform-database`, `    items:`, `      - key: ${m.name}-url`, `        path: url`);
  }
  for (const [k, v] of Object.entries(m.kubernetes.env)) env.push(`- name: ${k}`, `  value: ${JSON.stringify(v)}`);
  const fill = (text: string, marker: string, lines: string[]) =>
    text.replace(new RegExp(`^([ \\t]*)#@${marker}\\n`, "m"), (_all, indent: string) => lines.map((l) => `${indent}${l}\n`).join(""));
  let out = body
    .replaceAll("__NAME__", m.name)
    .replaceAll("__RPC_PORT__", String(m.ports.rpc))
    .replaceAll("__ADMIN_PORT__", String(m.ports.admin))
    .replaceAll("__MAX_REPLICAS__", String(m.kubernetes.maxReplicas));
  out = fill(fill(fill(out, "env", env), "volumeMounts", mounts), "volumes", volumes);
  const leftover = /__[A-Z_]+__|^[ \t]*#@\w+/m.exec(out);
  if (leftover) throw new Error(`deploy/k8s/templates/${m.edge ? "edge" : "backend"}.yaml: unknown placeholder ${leftover[0].trim()}`);
  const calls = effectiveDependencies(m, all).map((d) => d.service);
  const callers = callersOf(m.name, all);
  return (
    hashHeader(
      `Template: deploy/k8s/templates/${m.edge ? "edge" : "backend"}.yaml.`,
      `${m.name}: ${m.description}. ${[...(m.edge ? [] : [`Called by ${callers.join(", ") || "nobody"}`]), `${m.edge ? "Calls" : "calls"} ${[...calls, ...(m.database ? ["PostgreSQL"] : [])].join(", ") || "nothing"}`].join("; ")}.`,
    ) + out
  );
}

/**
 * The headless Service (no virtual IP: one A record per ready pod) callers
 * reach a service through, so that they balance per call over its pods.
 */
export function headlessServiceName(service: string): string {
  return `${service}-headless`;
}

/** deploy/k8s/base/kustomization.yaml: the shared config, every service, the network policies. */
export function baseKustomization(manifests: readonly LoadedManifest[]): string {
  return (
    hashHeader(
      "The platform's services, without a namespace and without a way in from",
      "outside the cluster: the overlays (overlays/dev, overlays/production) add",
      "both. See docs/kubernetes.md.",
    ) +
    [
      "apiVersion: kustomize.config.k8s.io/v1beta1",
      "kind: Kustomization",
      "resources:",
      "  - platform-config.yaml",
      ...manifests.toReversed().map((m) => `  - ${m.name}.yaml`),
      "  - network-policies.yaml",
      "",
    ].join("\n")
  );
}

const partOf = "app.kubernetes.io/part-of: resilient-platform";

/** deploy/k8s/base/network-policies.yaml: default deny, then each service reachable by its callers only. */
export function networkPolicies(manifests: readonly LoadedManifest[]): string {
  const ordered = manifests.toReversed();
  const width = Math.max(...ordered.map((m) => callersOf(m.name, manifests).join(", ").length), "monitoring namespace".length, "anyone".length);
  const graph = ordered.map((m) => `  ${(m.edge ? "anyone" : callersOf(m.name, manifests).join(", ") || "nobody").padEnd(width)} -> ${m.name} (rpc)`);
  const header = hashHeader(
    "Who may connect to whom (ingress only). Needs a CNI that enforces",
    "NetworkPolicy (Calico, Cilium, ...); without one these objects are accepted",
    "and silently do nothing.",
    "",
    ...graph,
    `  ${"monitoring namespace".padEnd(width)} -> every service (admin: /metrics)`,
    "",
    "Ports are the container port names (rpc, admin), so one rule fits every",
    "service. The kubelet's probes come from the node and are not subject to",
    "these policies on common CNIs. PostgreSQL is outside the cluster; egress is",
    "not restricted here (docs/kubernetes.md).",
  );
  const doc = (name: string, spec: string[]) =>
    [
      "apiVersion: networking.k8s.io/v1",
      "kind: NetworkPolicy",
      "metadata:",
      `  name: ${name}`,
      "  labels:",
      `    app.kubernetes.io/name: ${name}`,
      `    ${partOf}`,
      "spec:",
      ...spec,
    ].join("\n");
  const selectorOf = (name: string, indent: string) => [`${indent}matchLabels:`, `${indent}  app.kubernetes.io/name: ${name}`, `${indent}  ${partOf}`];
  const docs = [
    doc("default-deny-ingress", [
      "  # Every pod in the namespace; nothing is allowed unless a policy below says so.",
      "  podSelector: {}",
      '  policyTypes: ["Ingress"]',
    ]),
    ...ordered.map((m) => {
      const callers = callersOf(m.name, manifests);
      const ingress = m.edge
        ? [
            "  ingress:",
            "    # The public entry: any source (load balancer, ingress controller,",
            "    # port-forward), RPC port only.",
            "    - ports:",
            "        - port: rpc",
            "          protocol: TCP",
          ]
        : callers.length === 0
          ? ["  # No service calls it: nothing may connect to its RPC port.", "  ingress: []"]
          : [
              "  ingress:",
              "    - from:",
              ...callers.flatMap((c) => ["        - podSelector:", ...selectorOf(c, "            ")]),
              "      ports:",
              "        - port: rpc",
              "          protocol: TCP",
            ];
      return doc(`${m.name}-ingress`, ["  podSelector:", ...selectorOf(m.name, "    "), '  policyTypes: ["Ingress"]', ...ingress]);
    }),
    doc("metrics-scrape", [
      "  # Prometheus scrapes /metrics on the admin port from the namespace named",
      "  # `monitoring`; change the name if yours runs elsewhere. The admin port also",
      "  # serves /admin/*: nothing else may reach it.",
      "  podSelector:",
      "    matchLabels:",
      `      ${partOf}`,
      '  policyTypes: ["Ingress"]',
      "  ingress:",
      "    - from:",
      "        - namespaceSelector:",
      "            matchLabels:",
      "              kubernetes.io/metadata.name: monitoring",
      "      ports:",
      "        - port: admin",
      "          protocol: TCP",
    ]),
  ];
  return `${header + docs.join("\n---\n")}\n`;
}

/** overlays/production/kustomization.yaml's per-service HPA ceilings. */
export function productionReplicaPatches(manifests: readonly LoadedManifest[], pools: PoolPlan): string {
  const lines: string[] = [];
  const withDb = manifests.toReversed().filter((m) => m.database);
  for (const m of manifests.toReversed()) {
    if (m === withDb[0]) {
      const poolMax = (x: LoadedManifest) => pools.pools[x.name] ?? 0;
      const total = withDb.map((x) => `(${x.kubernetes.productionMaxReplicas} + 1) x ${poolMax(x)}`).join(" + ");
      const sum = withDb.reduce((n, x) => n + (x.kubernetes.productionMaxReplicas + 1) * poolMax(x), 0);
      lines.push(
        `  # ${withDb.map((x) => x.name).join(" and ")} hold database connections: (maxReplicas + maxSurge) x`,
        `  # DB_POOL_MAX for each must stay within the server's budget (${postgresServersFile}),`,
        `  # here ${total} = ${sum} (docs/scaling.md; the manifest test checks it).`,
      );
    }
    lines.push(
      "  - target:",
      "      kind: HorizontalPodAutoscaler",
      `      name: ${m.name}`,
      "    patch: |-",
      "      - op: replace",
      "        path: /spec/maxReplicas",
      `        value: ${m.kubernetes.productionMaxReplicas}`,
    );
  }
  return `${lines.join("\n")}\n`;
}
