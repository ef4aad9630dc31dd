import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { sourceLocator } from "./source-location.js";
import { summarizeHeapProfile } from "./summarize-heap-profile.js";

const frame = (functionName: string, url = "", lineNumber = 0, columnNumber = 0) => ({ functionName, url, lineNumber, columnNumber });
const node = (callFrame: ReturnType<typeof frame>, selfSize: number, children: unknown[] = []) => ({ callFrame, selfSize, children }) as never;

test("bytes by place: what node's modules and V8's builtins allocate is booked to the caller outside them", () => {
  const connect = frame("next", "file:///w/node_modules/@connectrpc/connect/dist/esm/a.js");
  const ours = frame("handler", "file:///w/packages/runtime/src/server/serve.ts");
  const s = summarizeHeapProfile({
    head: node(frame("(root)"), 0, [
      node(ours, 100, [node(frame("Promise"), 40), node(frame("addEventListener", "node:internal/event_target"), 10, [node(frame("(anon)"), 5)])]),
      node(connect, 200, [node(frame("Promise"), 60, [node(ours, 7)])]),
      node(frame("(garbage collector)"), 3),
    ]),
  });
  assert.equal(s.bytes, 425);
  assert.deepEqual(s.places, [
    ["@connectrpc/connect", 260],
    ["@platform/runtime", 162],
    ["(garbage collector)", 3],
  ]);
});

test("a bundled file's frames are located in the sources it was bundled from; other frames are left as they are", async () => {
  const dir = mkdtempSync(join(tmpdir(), "source-location-"));
  try {
    mkdirSync(join(dir, "node_modules", "dep"), { recursive: true });
    writeFileSync(join(dir, "node_modules", "dep", "index.js"), "export function depWork() {\n  return [1, 2, 3].map((x) => x * 2);\n}\n");
    writeFileSync(join(dir, "main.ts"), 'import { depWork } from "dep";\nexport function ownWork(): number[] {\n  return depWork();\n}\n');
    await esbuild.build({
      entryPoints: [join(dir, "main.ts")],
      bundle: true,
      format: "esm",
      outfile: join(dir, "dist", "main.js"),
      sourcemap: "linked",
      sourcesContent: false,
      logLevel: "silent",
    });
    const lines = readFileSync(join(dir, "dist", "main.js"), "utf8").split("\n");
    const at = (needle: string) => {
      const line = lines.findIndex((l) => l.includes(needle));
      return { lineNumber: line, columnNumber: lines[line]!.indexOf(needle) };
    };
    const locate = sourceLocator();
    const bundle = pathToFileURL(join(dir, "dist", "main.js")).href;
    const dep = at("[1, 2, 3]");
    const own = at("return depWork()");
    assert.equal(locate(frame("depWork", bundle, dep.lineNumber, dep.columnNumber)).url, pathToFileURL(join(dir, "node_modules", "dep", "index.js")).href);
    const ownFrame = locate(frame("ownWork", bundle, own.lineNumber, own.columnNumber));
    assert.equal(ownFrame.url, pathToFileURL(join(dir, "main.ts")).href);
    assert.equal(ownFrame.lineNumber, 2);
    const plain = frame("emit", "node:events", 4, 2);
    assert.deepEqual(locate(plain), plain);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
