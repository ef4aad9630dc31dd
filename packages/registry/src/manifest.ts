/**
 * The service manifest, services/<name>/service.json (MANIFEST.md; the JSON
 * schema for editors is packages/registry/service.schema.json). One folder,
 * one manifest: everything that lists services is generated from these.
 */
export interface ServiceManifest {
  /** The folder name, [a-z][a-z0-9-]*. */
  name: string;
  description: string;
  /** Defaults; the launcher may pick free ones. */
  ports: { rpc: number; admin: number };
  /** Fully-qualified protobuf services it serves (each declared in proto/). */
  apis: string[];
  /** The gateway publishes these apis. */
  public: boolean;
  /** The gateway: published to the outside, publishes the public services' apis. */
  edge: boolean;
  /** Services it calls, with the bulkhead for each. */
  dependencies: DependencyManifest[];
  /**
   * false: `npm start` and the tests run it, no deployment does (compose,
   * Kubernetes, prometheus, the database init script): the example services
   * that `npm run new-service` copies. Default true.
   */
  deploy: boolean;
  /** Omitted: no database. */
  database?: { schema: string; role: string };
  /** deploy/k8s: the HPA's ceilings, literal settings (never secrets). */
  kubernetes: { maxReplicas: number; productionMaxReplicas: number; env: Record<string, string> };
  /** What `npm start` and the tests set beyond the ports and URLs (e.g. a demo catalogue), never a deployment. */
  launcher: { env: Record<string, string> };
}

export interface DependencyManifest {
  service: string;
  maxConcurrent: number;
  minConcurrent?: number;
  maxQueue: number;
}

/** A manifest with the file it came from, for messages. */
export interface LoadedManifest extends ServiceManifest {
  file: string;
}

/** `inventory-db` -> `INVENTORY_DB`: the prefix of a service's variables (`<PREFIX>_URL`). */
export function envPrefix(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}
