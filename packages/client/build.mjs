// `npm run build`: src/ to dist/ (JavaScript) and types/ (declarations)
// with `tsc -b`, which rewrites nothing when both are up to date, so a build
// never disturbs a reader of dist/ (tests build while others read it).
// tsc -b trusts its build state, so an output that was removed since (a
// clean, another tool's build of dist/) makes it start over.
//
// The public API's generated code is @platform/proto's (one `buf generate`
// for every API): it is copied into src/gen first, so that this package
// compiles and ships it without depending on any other workspace. Only a
// changed file is written, which keeps tsc -b's check cheap.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";

/** The API packages this package publishes (under packages/proto/src/gen): the public one, and google.rpc's error details. */
const publicApis = ["checkout", "google"];
const generated = "../proto/src/gen";
/**
 * @platform/proto's modules that a client shares with the servers: the
 * declared-rule validation and the error details' readers. Copied into src/
 * as they are, where their "./gen/" imports find the copied generated code;
 * before any build, the type check finds the originals there (tsconfig.json's
 * rootDirs).
 */
const sharedModules = ["error-details.ts", "validation.ts"];

function filesUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

const copies = new Map(publicApis.flatMap((api) => filesUnder(join(generated, api)).map((f) => [join(api, f), readFileSync(join(generated, api, f), "utf8")])));
if (existsSync("src/gen")) for (const f of filesUnder("src/gen")) if (!copies.has(f)) rmSync(join("src/gen", f));
const targets = new Map([...copies].map(([f, text]) => [join("src/gen", f), text]));
for (const m of sharedModules) targets.set(join("src", m), readFileSync(join(generated, "..", m), "utf8"));
for (const [target, text] of targets) {
  if (existsSync(target) && readFileSync(target, "utf8") === text) continue;
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text);
}

const sources = readdirSync("src", { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".ts"))
  .map((e) => relative("src", join(e.parentPath, e.name)).replace(/\.ts$/, ""));
const missing = sources.some((s) => !existsSync(join("dist", `${s}.js`)) || !existsSync(join("types", `${s}.d.ts`)));
if (missing) rmSync("node_modules/.cache/client.tsbuildinfo", { force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-b", "tsconfig.build.json"], { stdio: "inherit" });
