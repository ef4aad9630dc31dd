/**
 * No import cycle anywhere in packages/*\/src: a module's imports form a
 * tree its reader can follow down, and a package can be split without
 * untangling a loop first. dependency-cruiser resolves the imports as the
 * type check does (tsconfig.json's paths, NodeNext's `.js` specifiers for
 * `.ts` files); type-only imports count too.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config";

const root = process.cwd();

interface Graph {
  modules: number;
  cycles: string[];
  unresolved: string[];
}

async function importGraph(dir: string, tsconfig: string): Promise<Graph> {
  const result = await cruise(
    [dir],
    {
      doNotFollow: { path: "node_modules" },
      tsPreCompilationDeps: true,
      tsConfig: { fileName: tsconfig },
      validate: true,
      enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "types", "node", "default"] },
      ruleSet: { forbidden: [{ name: "no-circular", severity: "error", from: {}, to: { circular: true } }] },
    },
    { extensionAlias: { ".js": [".ts", ".js"] } },
    { tsConfig: extractTSConfig(tsconfig) },
  );
  const out = result.output as ICruiseResult;
  const shown = (p: string) => relative(root, join(root, p));
  return {
    modules: out.summary.totalCruised,
    cycles: out.summary.violations.map((v) => [v.from, ...(v.cycle ?? []).map((c) => c.name)].map(shown).join(" -> ")),
    unresolved: out.modules.flatMap((m) =>
      m.dependencies.filter((d) => d.couldNotResolve && !d.coreModule).map((d) => `${shown(m.source)} imports ${d.module}`),
    ),
  };
}

test("packages/*/src: no import cycle, and every import resolves (an unresolved one would hide its cycles)", async () => {
  const graph = await importGraph("packages", join(root, "tsconfig.json"));
  assert.ok(graph.modules > 200, `cruised ${graph.modules} modules: the graph covers the packages`);
  assert.deepEqual(graph.unresolved, []);
  assert.deepEqual(graph.cycles, [], `import cycles:\n${graph.cycles.join("\n")}`);
});

test("a cycle through `.js` specifiers of `.ts` files and a type-only import is found", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "import-cycles-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext" } }));
  writeFileSync(join(dir, "a.ts"), 'import { b } from "./b.js";\nexport const a = () => b;\n');
  writeFileSync(join(dir, "b.ts"), 'import type { C } from "./c.js";\nexport const b: C = 1;\n');
  writeFileSync(join(dir, "c.ts"), 'import { a } from "./a.js";\nexport type C = number;\nexport const c = a;\n');
  const graph = await importGraph(relative(root, dir), join(dir, "tsconfig.json"));
  assert.deepEqual(graph.unresolved, []);
  assert.equal(graph.cycles.length > 0, true, "the a -> b -> c -> a cycle is reported");
  assert.match(graph.cycles[0]!, /a\.ts.*b\.ts.*c\.ts|b\.ts.*c\.ts.*a\.ts|c\.ts.*a\.ts.*b\.ts/);
});
