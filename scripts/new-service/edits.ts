/**
 * Edits to files that list every service. Each takes the file's current
 * text and returns the new text, or throws an AnchorError naming what it
 * could not find: the generator then refuses before writing anything, and
 * the service can be added by hand (docs/adding-a-service.md).
 */
import type { ServiceSpec } from "./templates.js";
import { composeBlock, k8sDatabase, networkPolicy, prometheusTarget } from "./templates.js";

export class AnchorError extends Error {
  constructor(
    readonly file: string,
    what: string,
  ) {
    super(`${file}: ${what}`);
  }
}

function insertAfterLast(text: string, file: string, pattern: RegExp, insert: string, what: string): string {
  const all = [...text.matchAll(new RegExp(pattern.source, pattern.flags.includes("g") ? pattern.flags : `${pattern.flags}g`))];
  const last = all.at(-1);
  if (last?.index === undefined) throw new AnchorError(file, `cannot find ${what}`);
  const end = last.index + last[0].length;
  return text.slice(0, end) + insert + text.slice(end);
}

function insertBefore(text: string, file: string, pattern: RegExp, insert: string, what: string): string {
  const m = pattern.exec(text);
  if (m?.index === undefined) throw new AnchorError(file, `cannot find ${what}`);
  return text.slice(0, m.index) + insert + text.slice(m.index);
}

/** packages/proto/src/index.ts: one namespace per API package. */
export function protoIndex(text: string, s: ServiceSpec): string {
  const line = `export * as ${s.namespace} from "./gen/${s.snake}/v1/${s.snake}_pb.js";`;
  return insertAfterLast(text, "packages/proto/src/index.ts", /^export \* as \w+ from "\.\/gen\/(?!grpc\/)[^"]+";$/m, `\n${line}`, "an `export * as xV1 from \"./gen/...\"` line");
}

/** deploy/k8s/base/kustomization.yaml: the manifest, before the network policies. */
export function kustomization(text: string, s: ServiceSpec): string {
  return insertBefore(text, "deploy/k8s/base/kustomization.yaml", /^ {2}- network-policies\.yaml$/m, `  - ${s.name}.yaml\n`, "the `- network-policies.yaml` resource");
}

/** deploy/k8s/base/network-policies.yaml: its ingress policy (no callers yet), appended. */
export function networkPolicies(text: string, s: ServiceSpec): string {
  if (!/^kind: NetworkPolicy$/m.test(text)) throw new AnchorError("deploy/k8s/base/network-policies.yaml", "no NetworkPolicy found");
  return `${text.replace(/\n*$/, "\n")}${networkPolicy(s)}`;
}

/**
 * test/kubernetes-manifests.test.ts: the call graph knows the service (no
 * callers yet, or the gateway with --public); with a database, the broken
 * copy that exceeds the connection budget expects the new service's
 * connections in its total.
 */
export function manifestTest(text: string, s: ServiceSpec): string {
  const re = /(const expectedCallers: Record<string, string\[\]> = \{)([^}]*)(\};)/;
  const m = re.exec(text);
  if (m === null) throw new AnchorError("test/kubernetes-manifests.test.ts", "cannot find `const expectedCallers: Record<string, string[]> = { ... };`");
  const key = /^[a-z]\w*$/.test(s.name) ? s.name : JSON.stringify(s.name);
  const callers = s.public ? `["gateway"]` : "[]";
  let out = text.replace(re, (_all, open: string, body: string, close: string) => `${open}${body.replace(/\s*$/, "")}, ${key}: ${callers}${body.endsWith(" ") ? " " : ""}${close}`);
  if (s.database) {
    const added = (k8sDatabase.maxReplicas + k8sDatabase.surge) * k8sDatabase.poolMax;
    out = out.replace(/(adds up to )(\d+)( connections, over the budget)/g, (_all, a: string, n: string, b: string) => `${a}${Number(n) + added}${b}`);
  }
  return out;
}

function composeServiceBlock(text: string, service: string): { start: number; end: number; body: string } | undefined {
  const m = new RegExp(`^ {2}${service}:\\n((?: {4}.*\\n|\\s*\\n)+)`, "m").exec(text);
  if (m?.index === undefined) return undefined;
  return { start: m.index, end: m.index + m[0].length, body: m[1] ?? "" };
}

/**
 * docker-compose.yml: the service block (before the gateway's), and with a
 * database its role's password in postgres' environment. Its DATABASE_URL
 * follows pricing's (its own role, password from the environment).
 */
export function compose(text: string, s: ServiceSpec): string {
  const file = "docker-compose.yml";
  let databaseUrl: string | undefined;
  let out = text;
  if (s.database) {
    const pricing = composeServiceBlock(text, "pricing");
    const m = pricing && /^ {6}DATABASE_URL: postgres:\/\/pricing:\$\{PRICING_DB_PASSWORD(?::\?[^}]*)?\}(@\S+)$/m.exec(pricing.body);
    if (!m) throw new AnchorError(file, "cannot find pricing's `DATABASE_URL: postgres://pricing:${PRICING_DB_PASSWORD...}@...` to follow");
    databaseUrl = `postgres://${s.snake}:\${${s.envPrefix}_DB_PASSWORD:?set ${s.envPrefix}_DB_PASSWORD}${m[1]}`;
    const postgres = composeServiceBlock(out, "postgres");
    if (!postgres) throw new AnchorError(file, "cannot find the postgres service");
    const passwords = [...postgres.body.matchAll(/^ {6}[A-Z0-9_]+_DB_PASSWORD: .*\n/gm)].at(-1);
    if (passwords?.index === undefined) throw new AnchorError(file, "cannot find a `*_DB_PASSWORD:` variable in postgres' environment");
    const at = postgres.start + (postgres.end - postgres.start - postgres.body.length) + passwords.index + passwords[0].length;
    out = `${out.slice(0, at)}      ${s.envPrefix}_DB_PASSWORD: \${${s.envPrefix}_DB_PASSWORD:?set ${s.envPrefix}_DB_PASSWORD, see README}\n${out.slice(at)}`;
  }
  out = insertBefore(out, file, /^ {2}gateway:$/m, composeBlock(s, databaseUrl), "the gateway service");
  return s.public ? composeGateway(out, s) : out;
}

/** docker-compose.yml, with --public: the gateway gets the service's URL and waits for it to be healthy. */
function composeGateway(text: string, s: ServiceSpec): string {
  const file = "docker-compose.yml";
  const gateway = composeServiceBlock(text, "gateway");
  if (!gateway) throw new AnchorError(file, "cannot find the gateway service");
  const head = gateway.end - gateway.body.length;
  let body = insertAfterLast(gateway.body, file, /^ {6}[A-Z0-9_]+_URL: \S+$/m, `\n      ${s.envPrefix}_URL: http://${s.name}:${s.port}`, "a `*_URL:` variable in the gateway's environment");
  const deps = /^ {4}depends_on:\n(?: {6}[\w-]+:\n {8}condition: service_healthy\n)+/m.exec(body);
  if (deps === null) throw new AnchorError(file, "cannot find the gateway's depends_on (`name:` / `condition: service_healthy` pairs)");
  const end = deps.index + deps[0].length;
  body = `${body.slice(0, end)}      ${s.name}:\n        condition: service_healthy\n${body.slice(end)}`;
  return text.slice(0, head) + body + text.slice(gateway.end);
}

/** services/gateway/src/forwarded-apis.ts, with --public: the API, its dependency name and default URL. */
export function forwardedApis(text: string, s: ServiceSpec): string {
  const file = "services/gateway/src/forwarded-apis.ts";
  const list = /^export const forwardedApis: readonly ForwardedApi\[\] = \[\n((?:.*\n)*?)\];$/m;
  if (!list.test(text)) throw new AnchorError(file, "cannot find `export const forwardedApis: readonly ForwardedApi[] = [ ... ];`");
  const entry = `  { service: ${s.namespace}.${s.pascal}Service, dependency: "${s.name}", defaultUrl: "http://127.0.0.1:${s.port}" },\n`;
  let out = text.replace(list, (all, body: string) => all.replace(`[\n${body}];`, `[\n${body}${entry}];`));
  const imports = /^import \{ ([\w, ]+) \} from "@platform\/proto";$/m;
  if (imports.test(out)) out = out.replace(imports, (_all, names: string) => `import { ${[...names.split(/,\s*/), s.namespace].sort().join(", ")} } from "@platform/proto";`);
  else out = insertAfterLast(out, file, /^import .*;$/m, `\nimport { ${s.namespace} } from "@platform/proto";`, "an import line");
  return out;
}

/** deploy/k8s/base/gateway.yaml, with --public: the gateway's `<PREFIX>_URL`, after its other *_URL settings. */
export function k8sGateway(text: string, s: ServiceSpec): string {
  return insertAfterLast(
    text,
    "deploy/k8s/base/gateway.yaml",
    /^ {12}- name: [A-Z0-9_]+_URL\n {14}value: \S+$/m,
    `\n            - name: ${s.envPrefix}_URL\n              value: http://${s.name}:${s.port}`,
    "a `- name: *_URL` / `value:` pair in the gateway's env",
  );
}

/** deploy/compose/postgres-init.sh: its role, owning its schema, with its password from the environment. */
export function postgresInit(text: string, s: ServiceSpec): string {
  const file = "deploy/compose/postgres-init.sh";
  let out = text;
  out = insertBefore(out, file, / -v db="\$POSTGRES_DB"/, ` -v ${s.snake}_pw="$${s.envPrefix}_DB_PASSWORD"`, 'the `-v db="$POSTGRES_DB"` argument');
  out = insertAfterLast(out, file, /^CREATE ROLE \w+ LOGIN PASSWORD :'\w+';$/m, `\nCREATE ROLE ${s.snake} LOGIN PASSWORD :'${s.snake}_pw';`, "a `CREATE ROLE x LOGIN PASSWORD :'x_pw';` line");
  out = insertAfterLast(out, file, /^CREATE SCHEMA \w+ AUTHORIZATION \w+;$/m, `\nCREATE SCHEMA ${s.snake} AUTHORIZATION ${s.snake};`, "a `CREATE SCHEMA x AUTHORIZATION x;` line");
  const grant = /^(GRANT CONNECT ON DATABASE :"db" TO [\w, ]+);$/m;
  if (!grant.test(out)) throw new AnchorError(file, 'cannot find `GRANT CONNECT ON DATABASE :"db" TO ...;`');
  return out.replace(grant, (_all, head: string) => `${head}, ${s.snake};`);
}

/** deploy/compose/example.env: a placeholder for its password. */
export function exampleEnv(text: string, s: ServiceSpec): string {
  if (!/^[A-Z0-9_]+_DB_PASSWORD=/m.test(text)) throw new AnchorError("deploy/compose/example.env", "cannot find a `*_DB_PASSWORD=` line");
  return `${text.replace(/\n*$/, "\n")}${s.envPrefix}_DB_PASSWORD=replace-me-${s.name}\n`;
}

/** test/repository.test.ts: the compose check renders with its password set too. */
export function repositoryTest(text: string, s: ServiceSpec): string {
  const re = /(const composeSecrets = \{)([^}]*?)(\s*\};)/;
  if (!re.test(text)) throw new AnchorError("test/repository.test.ts", "cannot find `const composeSecrets = { ... };`");
  return text.replace(re, (_all, open: string, body: string, close: string) => `${open}${body}, ${s.envPrefix}_DB_PASSWORD: "test-only-${s.name}"${close}`);
}

/** observability/prometheus.yml: scrape its admin port (the static_configs list ends the file). */
export function prometheus(text: string, s: ServiceSpec): string {
  if (!/\n {6}- targets: \[".+:\d+"\]\n {8}labels:\n {10}service: [\w-]+\n*$/.test(text)) {
    throw new AnchorError("observability/prometheus.yml", "the file must end with the platform job's static_configs list");
  }
  return `${text.replace(/\n*$/, "\n")}${prometheusTarget(s)}`;
}
