/**
 * The Kubernetes API schemas, offline: kubernetes-models (pinned, 5.1.0)
 * ships validators compiled from the Kubernetes 1.34 OpenAPI schemas, the
 * version of the pinned kubectl. Those schemas, like the API's own, allow
 * unknown fields, so a typo (`readinessprobe:`) passes them while the API
 * server rejects it (kubectl's default strict field validation). So each
 * object is also type-checked as an object literal against the package's
 * TypeScript interfaces of the same schemas, whose excess-property check
 * rejects unknown fields.
 */
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { idOf, type K8sObject } from "./objects.js";

type ModelClass = new (data: unknown) => { validate(): void };

/** Validates each object with kubernetes-models' compiled schema for its apiVersion and kind. */
export async function schemaErrors(objects: K8sObject[]): Promise<string[]> {
  const errors: string[] = [];
  for (const o of objects) {
    let model: ModelClass | undefined;
    try {
      const mod = (await import(`kubernetes-models/${o.apiVersion}/${o.kind}`)) as Record<string, unknown>;
      model = mod[o.kind] as ModelClass | undefined;
    } catch {
      model = undefined;
    }
    if (model === undefined) {
      errors.push(`${idOf(o)}: no schema for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    try {
      new model(o).validate();
    } catch (e) {
      errors.push(`${idOf(o)}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return errors;
}

/** A module that is never written: it sits beside this file so that it resolves the same node_modules. */
const virtualFile = fileURLToPath(new URL("./__strict-field-check__.ts", import.meta.url));

/**
 * Unknown fields: each object becomes an object literal typed with
 * kubernetes-models' interface for its kind, and excess-property errors are
 * reported per object.
 */
export function unknownFieldErrors(objects: K8sObject[]): string[] {
  const types = new Map<string, string>();
  const lines: string[] = [];
  const lineToObject = new Map<number, K8sObject>();
  for (const o of objects) {
    const key = `${o.apiVersion}/${o.kind}`;
    if (!types.has(key)) types.set(key, `T${types.size}`);
  }
  for (const [key, alias] of types) {
    const kind = key.slice(key.lastIndexOf("/") + 1);
    lines.push(`import type { I${kind} as ${alias} } from ${JSON.stringify(`kubernetes-models/${key}`)};`);
  }
  objects.forEach((o, i) => {
    lineToObject.set(lines.length, o);
    lines.push(`export const o${i}: ${types.get(`${o.apiVersion}/${o.kind}`)} = ${JSON.stringify(o)};`);
  });
  const source = lines.join("\n");
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === virtualFile ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest);
  host.fileExists = (name) => name === virtualFile || fileExists(name);
  host.readFile = (name) => (name === virtualFile ? source : readFile(name));
  const program = ts.createProgram([virtualFile], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (d.file?.fileName !== virtualFile || d.start === undefined) return message;
    const o = lineToObject.get(d.file.getLineAndCharacterOfPosition(d.start).line);
    return `${o ? idOf(o) : "imports"}: ${message}`;
  });
}
