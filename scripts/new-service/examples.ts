/**
 * The example services `npm run new-service` copies: real services of this
 * repository (they compile, pass their tests and run in `npm start`), one
 * without a database and one with its own schema and role.
 */
import { existsSync, readdirSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { deriveNames, type ServiceNames } from "./names.js";

export const examples = {
  plain: deriveNames("example-echo"),
  database: deriveNames("example-notes"),
} as const;

export function exampleFor(database: boolean): ServiceNames {
  return database ? examples.database : examples.plain;
}

/** Build output and installed packages are not part of a service's source. */
const notSource = new Set(["dist", "node_modules"]);

function filesUnder(root: string, dir: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)).split(sep).join("/"))
    .filter((f) => !f.split("/").some((segment) => notSource.has(segment)))
    .sort();
}

/**
 * Everything that makes up one example, relative to the repository root:
 * its folder (with service.json), its proto package and its end-to-end test.
 * The generated code under packages/proto is not copied: buf regenerates it.
 */
export function exampleFiles(root: string, example: ServiceNames): string[] {
  const files = [...filesUnder(root, `services/${example.name}`), ...filesUnder(root, `proto/${example.snake}`)];
  const e2e = `test/e2e/${example.name}.test.ts`;
  if (existsSync(join(root, e2e))) files.push(e2e);
  if (!files.includes(`services/${example.name}/service.json`))
    throw new Error(`the example services/${example.name} is missing (its service.json is not there)`);
  return files;
}
