import { defaultBulkhead, type LoadedManifest } from "../manifest.js";
import { callDepth, effectiveDependencies, forwardedApis } from "../graph.js";
import { generatedNotice } from "./header.js";

/**
 * services/gateway/src/forwarded-apis.generated.ts: data only (names, URLs,
 * bulkheads and call depths); forwarded-apis.ts resolves each api to its
 * generated descriptor.
 */
export function forwardedApisModule(manifests: readonly LoadedManifest[]): string {
  const edge = manifests.find((m) => m.edge);
  const calls = edge ? effectiveDependencies(edge, manifests) : [];
  const rows = forwardedApis(manifests).map(({ api, service }) => {
    const { maxConcurrent, minConcurrent, maxQueue } = calls.find((d) => d.service === service.name) ?? defaultBulkhead;
    const bulkhead = `{ maxConcurrent: ${maxConcurrent}, minConcurrent: ${minConcurrent}, maxQueue: ${maxQueue} }`;
    return `  { api: ${JSON.stringify(api)}, dependency: ${JSON.stringify(service.name)}, defaultUrl: "http://127.0.0.1:${service.ports.rpc}", bulkhead: ${bulkhead} },`;
  });
  const depths = calls.map((d) => `  ${JSON.stringify(d.service)}: ${callDepth(d.service, manifests)},`);
  return [
    `// ${generatedNotice}.`,
    "// The apis of every public service that the gateway does not serve itself",
    '// ("public": true in its service.json), forwarded unchanged.',
    "export const forwardedApiNames: readonly {",
    "  api: string;",
    "  dependency: string;",
    "  defaultUrl: string;",
    "  bulkhead: { maxConcurrent: number; minConcurrent: number; maxQueue: number };",
    "}[] = [",
    ...rows,
    "];",
    "",
    "// For every service the gateway calls, how many services its longest chain",
    "// of calls crosses, itself included: each attempt needs their hop reserves.",
    "export const callDepths: Readonly<Record<string, number>> = {",
    ...depths,
    "};",
    "",
  ].join("\n");
}
