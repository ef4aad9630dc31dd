// `npm run build`: src/ to dist/ (JavaScript) and types/ (declarations)
// with `tsc -b`, which rewrites nothing when both are up to date, so a build
// never disturbs a reader of dist/ (tests build while others read it).
// tsc -b trusts its build state, so an output that was removed since (a
// clean, another tool's build of dist/) makes it start over.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative } from "node:path";

const sources = readdirSync("src", { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".ts"))
  .map((e) => relative("src", join(e.parentPath, e.name)).replace(/\.ts$/, ""));
const missing = sources.some((s) => !existsSync(join("dist", `${s}.js`)) || !existsSync(join("types", `${s}.d.ts`)));
if (missing) rmSync("node_modules/.cache/client.tsbuildinfo", { force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-b", "tsconfig.build.json"], { stdio: "inherit" });
