/** What every generated file or region says about itself. */
export const generatedNotice = "generated from services/*/service.json by npm run generate:services; do not edit";

/** A `#` comment header for a wholly generated file. */
export function hashHeader(...why: string[]): string {
  return `${[`# ${generatedNotice}.`, ...why.map((l) => (l === "" ? "#" : `# ${l}`))].join("\n")}\n`;
}

/** One file's generated content, by path relative to the repository root. */
export interface Artifact {
  path: string;
  content: string;
}

/**
 * Replaces what lies between `# BEGIN generated: <region>` and
 * `# END generated: <region>` (both lines kept), for files that are
 * mostly written by hand: everything outside the markers stays as it is.
 * The markers must be there: a file that lost them is an error naming it.
 */
export function replaceRegion(text: string, file: string, region: string, body: string): string {
  const begin = new RegExp(`^([ \\t]*)# BEGIN generated: ${region}\\b.*\\n`, "m");
  const b = begin.exec(text);
  const endLine = new RegExp(`^[ \\t]*# END generated: ${region}\\b.*$`, "m");
  const e = b ? endLine.exec(text.slice(b.index + b[0].length)) : null;
  if (!b || !e)
    throw new Error(
      `${file}: the markers "# BEGIN generated: ${region}" and "# END generated: ${region}" are missing; restore them (see git history) so npm run generate:services can fill the region`,
    );
  const start = b.index + b[0].length;
  const end = start + e.index;
  const content = body === "" || body.endsWith("\n") ? body : `${body}\n`;
  return text.slice(0, start) + content + text.slice(end);
}

/** The first line of a region: the notice, indented like the region. */
export function regionBegin(region: string, indent = ""): string {
  return `${indent}# BEGIN generated: ${region} (${generatedNotice})`;
}
