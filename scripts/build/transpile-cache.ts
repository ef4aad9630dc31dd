import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256, writeAtomically } from "./files.js";

/**
 * What `npm run build` compiled before: for each source (by its path, its
 * text and the compiler's version and options), the hash of the JavaScript
 * it gave. A dist/ file whose content still has that hash is that output,
 * so the source is not transpiled again: a build in which nothing changed
 * (npm start, the image test, npm test's checks) reads and hashes files
 * instead of spending two seconds of a core in the compiler.
 *
 * Kept in the system's temporary folder, one file per repository, never
 * under node_modules or dist/ (the image copies both). Losing it costs
 * one full transpile; two builds at once each write a complete file (to
 * a temporary name, then renamed), and every entry is right whoever wins.
 */
export class TranspileCache {
  private readonly previous: Map<string, string>;
  private readonly used = new Map<string, string>();
  /** Sources found current (not transpiled) so far. */
  hits = 0;

  constructor(
    private readonly file: string,
    private readonly compilerKey: string,
  ) {
    let entries: Record<string, string> = {};
    try {
      if (existsSync(file)) entries = JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;
    } catch {
      // A damaged cache is an empty one.
    }
    this.previous = new Map(Object.entries(entries));
  }

  /** The cache of the repository at `root`, for this compiler version and these options. */
  static forRepository(root: string, compilerVersion: string, options: unknown): TranspileCache {
    return new TranspileCache(join(tmpdir(), `platform-build-${sha256(root).slice(0, 16)}.json`), `${compilerVersion}\n${JSON.stringify(options)}`);
  }

  private key(sourcePath: string, sourceText: string): string {
    return sha256(`${this.compilerKey}\n${sourcePath}\n${sourceText}`);
  }

  /** Whether `target` holds what `sourceText` compiled to when last compiled. */
  isCurrent(sourcePath: string, sourceText: string, target: string): boolean {
    const key = this.key(sourcePath, sourceText);
    const output = this.previous.get(key);
    if (output === undefined || !existsSync(target) || sha256(readFileSync(target)) !== output) return false;
    this.used.set(key, output);
    this.hits++;
    return true;
  }

  /** Records what `sourceText` compiled to (without errors). */
  record(sourcePath: string, sourceText: string, output: Buffer): void {
    this.used.set(this.key(sourcePath, sourceText), sha256(output));
  }

  /** Writes the entries of this build (those of sources gone or changed are dropped). */
  save(): void {
    writeAtomically(this.file, JSON.stringify(Object.fromEntries(this.used)));
  }
}
