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

/** A call's bulkhead, per method class (docs/isolation.md): its adaptive limit's ceiling and floor, and its queue. */
export interface Bulkhead {
  maxConcurrent: number;
  /** Written down as optional; parsed, the default floor capped at maxConcurrent. */
  minConcurrent: number;
  maxQueue: number;
}

export interface DependencyManifest extends Bulkhead {
  service: string;
}

/** The bulkhead toward a service the manifest does not size: a public service the edge forwards without listing it. */
export const defaultBulkhead: Readonly<Bulkhead> = { maxConcurrent: 32, minConcurrent: 4, maxQueue: 16 };

/** A manifest with the file it came from, for messages. */
export interface LoadedManifest extends ServiceManifest {
  file: string;
}

/** `inventory-db` -> `INVENTORY_DB`: the prefix of a service's variables (`<PREFIX>_URL`). */
export function envPrefix(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}
