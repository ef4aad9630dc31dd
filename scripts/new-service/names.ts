/** The names one service name turns into, in every place a service appears. */
export interface ServiceNames {
  /** As given: kebab-case. Directory, compose service, Kubernetes objects, metrics `service` label. */
  name: string;
  /** snake_case: proto package and directory, PostgreSQL role and schema. */
  snake: string;
  /** PascalCase: `<Pascal>Service`, the proto service and the implementation class. */
  pascal: string;
  /** camelCase: the start of the namespace (`<camel>V1`). */
  camel: string;
  /** camelCase + V1: the namespace exported by @platform/proto. */
  namespace: string;
  /** SCREAMING_SNAKE: prefix of its env variables (`<PREFIX>_URL`, `<PREFIX>_DB_PASSWORD`). */
  envPrefix: string;
  /** Proto package, e.g. `inventory.v1`. */
  protoPackage: string;
}

export const namePattern = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
export const maxNameLength = 40;

/**
 * Names that would collide with something that is not a service directory:
 * compose services, the compose superuser role, PostgreSQL schemas, proto
 * packages we vendor or import.
 */
const reserved = new Map<string, string>([
  ["postgres", "a compose service (the database)"],
  ["prometheus", "a compose service (observability profile)"],
  ["grafana", "a compose service (observability profile)"],
  ["platform", "the compose database superuser role"],
  ["public", "PostgreSQL's default schema"],
  ["information-schema", "a PostgreSQL system schema"],
  ["grpc", "a vendored proto package (grpc.health.v1)"],
  ["google", "the protobuf well-known types' package"],
  ["buf", "buf's own proto packages"],
]);

export function deriveNames(name: string): ServiceNames {
  const parts = name.split("-");
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  const pascal = parts.map(cap).join("");
  const snake = parts.join("_");
  const camel = `${pascal.charAt(0).toLowerCase()}${pascal.slice(1)}`;
  return {
    name,
    snake,
    pascal,
    camel,
    namespace: `${camel}V1`,
    envPrefix: snake.toUpperCase(),
    protoPackage: `${snake}.v1`,
  };
}

/** Problems with the shape of a name (not whether it is taken); empty when fine. */
export function nameProblems(name: string): string[] {
  const out: string[] = [];
  if (!namePattern.test(name)) {
    out.push(
      `"${name}" is not a valid service name: use lowercase letters, digits and single dashes, starting with a letter (e.g. "inventory", "stock-level")`,
    );
    return out;
  }
  if (name.length > maxNameLength)
    out.push(`"${name}" is longer than ${maxNameLength} characters (Kubernetes object names and PostgreSQL identifiers must stay short)`);
  const why = reserved.get(name);
  if (why !== undefined) out.push(`"${name}" is reserved: it is ${why}`);
  if (name.startsWith("pg-")) out.push(`"${name}" is reserved: PostgreSQL keeps schema and role names starting with pg_ for itself`);
  return out;
}
