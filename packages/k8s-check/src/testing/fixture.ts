/**
 * A small made-up platform that follows every policy, for the policies' own
 * specs: gateway (public) -> checkout -> orders (with a database), each with
 * its Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget and
 * NetworkPolicy, a shared ConfigMap, a default-deny policy and the gateway
 * behind a LoadBalancer. A spec breaks one thing in a fresh copy and expects
 * the policy to name it.
 */
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import type { PlatformFacts } from "../facts.js";
import type { K8sObject } from "../objects.js";

const partOf = "resilient-platform";
const namespace = "fixture";
const ports = { gateway: [8080, 9080], checkout: [8081, 9081], orders: [8082, 9082] } as const;
type Name = keyof typeof ports;
const callers: Record<Name, Name[]> = { gateway: [], checkout: ["gateway"], orders: ["checkout"] };

function meta(name: string, app?: string) {
  return { name, namespace, labels: { "app.kubernetes.io/part-of": partOf, ...(app ? { "app.kubernetes.io/name": app } : {}) } };
}

function env(name: Name): NonNullable<IContainer["env"]> {
  const [rpc, admin] = ports[name];
  const base = [
    { name: "SERVICE", value: name },
    { name: "PORT", value: String(rpc) },
    { name: "ADMIN_PORT", value: String(admin) },
  ];
  if (name === "gateway") return [...base, { name: "CHECKOUT_URL", value: "http://checkout-headless:8081" }];
  if (name === "checkout") return [...base, { name: "ORDERS_URL", value: "http://orders-headless:8082" }, { name: "ORDERS_MAX_CONCURRENT", value: "16" }];
  return [...base, { name: "DATABASE_URL_FILE", value: "/var/run/secrets/platform-database/url" }, { name: "DB_POOL_MAX", value: "4" }];
}

function deployment(name: Name): K8sObject {
  const [rpc, admin] = ports[name];
  const labels = { "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": partOf };
  const d: IDeployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(name, name),
    spec: {
      replicas: 2,
      selector: { matchLabels: { "app.kubernetes.io/name": name } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels, annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": String(admin), "prometheus.io/path": "/metrics" } },
        spec: {
          terminationGracePeriodSeconds: 30,
          securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: "RuntimeDefault" } },
          containers: [
            {
              name,
              image: "registry.example.com/platform:1.2.3",
              ports: [
                { name: "rpc", containerPort: rpc },
                { name: "admin", containerPort: admin },
              ],
              envFrom: [{ configMapRef: { name: "platform-common" } }],
              env: env(name),
              readinessProbe: { grpc: { port: rpc } },
              livenessProbe: { grpc: { port: rpc } },
              lifecycle: { preStop: { exec: { command: ["sleep", "5"] } } },
              resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { cpu: "1", memory: "256Mi" } },
              securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
              volumeMounts: [
                { name: "tmp", mountPath: "/tmp" },
                ...(name === "orders" ? [{ name: "database-url", mountPath: "/var/run/secrets/platform-database", readOnly: true }] : []),
              ],
            },
          ],
          volumes: [
            { name: "tmp", emptyDir: {} },
            ...(name === "orders" ? [{ name: "database-url", secret: { secretName: "platform-database", items: [{ key: "orders-url", path: "url" }] } }] : []),
          ],
        },
      },
    },
  };
  return d as K8sObject;
}

function policy(name: Name): K8sObject {
  const [rpc, admin] = ports[name];
  const fromCallers = callers[name].map((c) => ({ podSelector: { matchLabels: { "app.kubernetes.io/name": c } } }));
  const np: INetworkPolicy = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: meta(`${name}-ingress`),
    spec: {
      podSelector: { matchLabels: { "app.kubernetes.io/name": name } },
      policyTypes: ["Ingress"],
      ingress: [
        name === "gateway" ? { ports: [{ port: rpc }] } : { from: fromCallers, ports: [{ port: rpc }] },
        { from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }], ports: [{ port: admin }] },
      ],
    },
  };
  return np as K8sObject;
}

function service(name: Name): K8sObject[] {
  const [rpc] = ports[name];
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta(name, name),
      spec: { selector: { "app.kubernetes.io/name": name }, ports: [{ name: "rpc", port: rpc, targetPort: "rpc" }] },
    },
    ...(name === "gateway"
      ? []
      : [
          {
            apiVersion: "v1",
            kind: "Service",
            metadata: meta(`${name}-headless`, name),
            spec: { clusterIP: "None", selector: { "app.kubernetes.io/name": name }, ports: [{ name: "rpc", port: rpc, targetPort: "rpc" }] },
          },
        ]),
    {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: meta(name, name),
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
        minReplicas: 2,
        maxReplicas: 4,
        metrics: [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } } }],
      },
    },
    {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: meta(name, name),
      spec: { maxUnavailable: 1, selector: { matchLabels: { "app.kubernetes.io/name": name } } },
    },
  ];
}

/** A fresh copy of the valid platform: specs may change it. */
export function validPlatform(): K8sObject[] {
  const names: Name[] = ["gateway", "checkout", "orders"];
  return [
    { apiVersion: "v1", kind: "ConfigMap", metadata: meta("platform-common"), data: { LOG_LEVEL: "info", DRAIN_TIMEOUT_MS: "10000" } },
    ...names.flatMap((n) => [deployment(n), ...service(n)]),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta("gateway-public", "gateway"),
      spec: { type: "LoadBalancer", selector: { "app.kubernetes.io/name": "gateway" }, ports: [{ name: "rpc", port: 80, targetPort: "rpc" }] },
    },
    { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: meta("default-deny-ingress"), spec: { podSelector: {}, policyTypes: ["Ingress"] } },
    ...names.map(policy),
  ];
}

const common = ["SERVICE", "PORT", "ADMIN_PORT", "HOST", "LOG_LEVEL", "DRAIN_TIMEOUT_MS"];

/** What the made-up platform's services read. */
export function fixtureFacts(): PlatformFacts {
  return {
    partOf,
    publicService: "gateway",
    services: {
      gateway: { callers: [], env: new Set([...common, "CHECKOUT_URL", "CHECKOUT_MAX_CONCURRENT"]), needsDatabase: false },
      checkout: { callers: ["gateway"], env: new Set([...common, "ORDERS_URL", "ORDERS_MAX_CONCURRENT"]), needsDatabase: false },
      orders: {
        callers: ["checkout"],
        env: new Set([...common, "DATABASE_URL", "DATABASE_URL_FILE", "DB_POOL_MAX"]),
        needsDatabase: true,
        dbPoolMaxDefault: 10,
      },
    },
    defaultDrainMs: 10_000,
    shutdownSlackSeconds: 2,
    databaseConnectionBudget: 30,
    databaseSecret: "platform-database",
    runAsUser: 1000,
  };
}

/** Finds an object in a copy, for changing it. */
export function find<T>(objects: K8sObject[], kind: string, name: string): T & K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (o === undefined) throw new Error(`no ${kind}/${name} in the fixture`);
  return o as unknown as T & K8sObject;
}

/** The single container of a Deployment in a copy. */
export function container(objects: K8sObject[], name: string): IContainer {
  const c = find<IDeployment>(objects, "Deployment", name).spec?.template.spec?.containers[0];
  if (c === undefined) throw new Error(`Deployment/${name} has no container`);
  return c;
}

export function networkPolicy(objects: K8sObject[], name: string): INetworkPolicy {
  return find<INetworkPolicy>(objects, "NetworkPolicy", name);
}
