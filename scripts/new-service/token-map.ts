/**
 * Renaming a copied example: every spelling of the example's name, in the
 * files' text and in their paths, becomes the same spelling of the new
 * name. Nothing else is touched: a token matches only as a whole name or
 * at the start of an identifier (`exampleNotesV1`, `ExampleNotesService`),
 * never inside a longer word.
 */
import type { ServiceNames } from "./names.js";

/** [from, to] pairs, one per spelling. */
export type TokenMap = readonly (readonly [string, string])[];

export function tokenMap(from: ServiceNames, to: ServiceNames): TokenMap {
  return [
    [from.name, to.name], // example-notes: folder, process, metrics label, package name
    [from.snake, to.snake], // example_notes: proto package and folder, schema, role
    [from.pascal, to.pascal], // ExampleNotes: proto service, class, config type
    [from.camel, to.camel], // exampleNotes: the @platform/proto namespace
    [from.envPrefix, to.envPrefix], // EXAMPLE_NOTES: env variables
  ];
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function pattern(map: TokenMap): RegExp {
  // Longest first, in one pass: a replacement is never matched again.
  const tokens = [...map.map(([from]) => from)].sort((a, b) => b.length - a.length).map(escapeRegExp);
  // Not inside a longer word on the left; on the right a lowercase letter or
  // digit would continue the name (`example-notes2`), an uppercase letter
  // starts the next part of an identifier (`ExampleNotesService`).
  return new RegExp(`(?<![A-Za-z0-9])(?:${tokens.join("|")})(?![a-z0-9])`, "g");
}

export function renameText(text: string, map: TokenMap): string {
  const to = new Map(map);
  return text.replace(pattern(map), (token) => to.get(token)!);
}

/** A relative path with each segment renamed (`services/example-notes/src/example-notes-service.ts`). */
export function renamePath(path: string, map: TokenMap): string {
  return path
    .split("/")
    .map((segment) => renameText(segment, map))
    .join("/");
}
