/**
 * The repository's Dockerfile, read with dockerfile-ast (the parser behind
 * the Docker language server), reduced to what the image tests check and
 * run: its stages, and the runtime stage's environment, command,
 * healthcheck, user and working directory.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type * as DockerfileAst from "dockerfile-ast";
import type { Arg, Instruction } from "dockerfile-ast";

/**
 * The parser, loaded on first use: every test file imports this package,
 * and few read the Dockerfile (its module graph is a tenth of a CPU second
 * to load).
 */
let parser: typeof DockerfileAst | undefined;
const dockerfileAst = () => (parser ??= createRequire(import.meta.url)("dockerfile-ast") as typeof DockerfileAst);

export interface Stage {
  name: string | undefined;
  /** The base image, ARGs resolved. */
  from: string;
  instructions: Instruction[];
}

export interface ImageSpec {
  text: string;
  stages: Stage[];
  /** The last stage: what the image is. */
  runtime: Stage;
  /** ENV of the runtime stage, in order, `${VAR}` resolved from ARG defaults and earlier ENV. */
  env: Record<string, string>;
  cmd: string[];
  /** The HEALTHCHECK command (exec form), undefined without one. */
  healthcheck: string[] | undefined;
  user: string | undefined;
  workdir: string | undefined;
}

export function readDockerfile(root: string): ImageSpec {
  return parseDockerfile(readFileSync(join(root, "Dockerfile"), "utf8"));
}

export function parseDockerfile(text: string): ImageSpec {
  const { Arg, DockerfileParser, Env, Healthcheck } = dockerfileAst();
  const dockerfile = DockerfileParser.parse(text);
  const globalArgs: Record<string, string> = {};
  for (const a of dockerfile.getInitialARGs()) Object.assign(globalArgs, argDefault(a));
  const stages: Stage[] = [];
  for (const from of dockerfile.getFROMs()) {
    stages.push({ name: from.getBuildStage() ?? undefined, from: substitute(from.getImageName() ?? "", globalArgs), instructions: [] });
  }
  let current = -1;
  for (const i of dockerfile.getInstructions()) {
    if (i.getKeyword() === "FROM") current++;
    else if (current >= 0) stages[current]!.instructions.push(i);
  }
  const runtime = stages[stages.length - 1];
  if (!runtime) throw new Error("Dockerfile: no FROM");

  const vars: Record<string, string> = {};
  const env: Record<string, string> = {};
  let cmd: string[] = [];
  let healthcheck: string[] | undefined;
  let user: string | undefined;
  let workdir: string | undefined;
  for (const i of runtime.instructions) {
    const keyword = i.getKeyword();
    if (i instanceof Arg) Object.assign(vars, argDefault(i));
    else if (i instanceof Env) {
      for (const p of i.getProperties()) {
        const value = substitute(unquote(p.getValue() ?? ""), { ...vars, ...env });
        env[p.getName()] = value;
      }
    } else if (keyword === "CMD") cmd = execForm(i.getArgumentsContent() ?? "", "CMD");
    else if (i instanceof Healthcheck) {
      const m = /\bCMD\s+(.*)$/s.exec(i.getArgumentsContent() ?? "");
      healthcheck = m ? execForm(m[1]!, "HEALTHCHECK CMD") : undefined;
    } else if (keyword === "USER") user = i.getArgumentsContent() ?? undefined;
    else if (keyword === "WORKDIR") workdir = i.getArgumentsContent() ?? undefined;
  }
  return { text, stages, runtime, env, cmd, healthcheck, user, workdir };
}

/** The exec (JSON) form; the shell form is refused: it would hide the command behind /bin/sh's parsing. */
function execForm(text: string, what: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`Dockerfile: ${what} must use the exec form ["program", "arg", ...], got ${text}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === "string")) throw new Error(`Dockerfile: ${what} must be a list of strings`);
  return parsed;
}

function argDefault(a: Arg): Record<string, string> {
  const p = a.getProperty();
  return p && p.getValue() !== null ? { [p.getName()]: unquote(p.getValue()!) } : {};
}

function unquote(v: string): string {
  return /^"(.*)"$/s.exec(v)?.[1] ?? v;
}

/** `${NAME}` and `$NAME` from `vars`; unknown names are left as written. */
export function substitute(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{(\w+)\}|\$(\w+)/g, (all, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? all);
}
