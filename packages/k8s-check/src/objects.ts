/** Rendered Kubernetes objects as plain JSON, and small helpers shared by the checks. */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/** A rendered Kubernetes object. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** How messages name an object: Kind/name. */
export function idOf(o: K8sObject): string {
  return `${o.kind}/${o.metadata.name}`;
}

/** Checks that a parsed YAML document is an object with apiVersion, kind and metadata.name. */
export function asObject(value: unknown, source: string): K8sObject {
  if (!isRecord(value) || typeof value["apiVersion"] !== "string" || typeof value["kind"] !== "string") {
    throw new Error(`${source}: not a Kubernetes object (apiVersion and kind are required)`);
  }
  const meta = value["metadata"];
  if (!isRecord(meta) || typeof meta["name"] !== "string") throw new Error(`${source}: metadata.name is required`);
  return value as K8sObject;
}

/** An image reference split into repository, tag and digest. */
export function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const [withoutDigest = image, digest] = image.split("@", 2);
  const colon = withoutDigest.lastIndexOf(":");
  // A colon before the last slash belongs to a registry port, not a tag.
  if (colon > withoutDigest.lastIndexOf("/")) {
    return { name: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1), ...(digest ? { digest } : {}) };
  }
  return { name: withoutDigest, ...(digest ? { digest } : {}) };
}
