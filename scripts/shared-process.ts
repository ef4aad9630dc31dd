/**
 * Unit specs that share a process. Each test file run by node's runner is
 * a node process of its own, and most of a small spec's cost is that
 * process: node, tsx and the module graph it imports (@platform/runtime,
 * connect, protobuf: about 0.6 CPU seconds under tsx, where the spec's own
 * tests take a few hundredths). So the *.spec.ts files run a few to a
 * process: the runner is given one entry file per group (written here),
 * which runs each spec as a suite named by its path, one after another.
 *
 * What a spec keeps in a shared process: its top-level hooks (they become
 * its suite's hooks, not every file's), its own module instances of
 * nothing (modules are shared: a spec that needs a fresh module state, a
 * process-wide setting or listener it does not restore, or a process of its
 * own for any other reason says so with a line `// npm test: own process (why)`).
 * What it loses: a timer or a server it leaves open keeps the whole group's
 * process alive (the runner then ends it, --test-force-exit), and an error
 * it throws late lands in a later spec's test.
 *
 * TEST_TIMINGS gives one line per shared process, not per spec: a hook
 * that measured each suite's seconds ran in the wrong context (registered
 * after an await, node attached it to the file, not the suite).
 */
import { writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";

/** The line by which a spec asks for a process of its own. */
export const ownProcessMarker = /^\/\/ npm test: own process\b/m;

/**
 * Splits `files` (heaviest first) into at most `count` groups of about
 * equal weight, each heaviest first: every file goes to the lightest group
 * so far.
 */
export function partition(files: string[], weight: (file: string) => number, count: number): string[][] {
  const groups = Array.from({ length: Math.min(count, files.length) }, () => ({ files: [] as string[], weight: 0 }));
  for (const f of [...files].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
    const lightest = groups.reduce((min, g) => (g.weight < min.weight ? g : min));
    lightest.files.push(f);
    lightest.weight += weight(f);
  }
  return groups.map((g) => g.files);
}

/**
 * Writes the entry file of one group to `dir` and returns its path. The
 * specs are imported one after another when the process starts (no spec
 * has top-level await or starts anything when imported), then their
 * suites run one after another.
 */
export function writeSharedProcessEntry(dir: string, index: number, files: string[], root: string): string {
  const path = join(dir, `shared-process-${index}.mjs`);
  const specs = files.map((f) => ({ name: relative(root, f), url: pathToFileURL(f).href }));
  writeFileSync(
    path,
    `// npm test: ${files.length} unit specs in one process (scripts/shared-process.ts)
import { suite } from "node:test";
const specs = ${JSON.stringify(specs, null, 2)};
// Every suite is registered at once: node's runner builds all of a file's suites before it runs
// the first (so a suite cannot wait for the one before it to end). Each imports its spec once the
// suite before has imported its own: a spec's test() and describe() calls attach to the suite
// whose import is running, and two imports at once would mix them up (seen: specs whose tests
// were never run). The suites then run one after another.
let imported = Promise.resolve();
for (const spec of specs) {
  const previous = imported;
  let importedThis;
  imported = new Promise((resolve) => (importedThis = resolve));
  suite(spec.name, async () => {
    await previous;
    try {
      await import(spec.url);
    } finally {
      importedThis();
    }
  });
}
`,
  );
  return path;
}
