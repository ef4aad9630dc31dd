/**
 * Splits a child's output into lines, forwards each to `onLog`, and keeps the
 * last few so that a failed start can say why (postgres writes the reason to
 * its log, not to its exit code).
 */
export class LogTail {
  private readonly lines: string[] = [];
  private partial = "";

  constructor(
    private readonly onLog?: (line: string) => void,
    private readonly keep = 40,
  ) {}

  push(chunk: Buffer | string): void {
    const parts = (this.partial + chunk.toString()).split("\n");
    this.partial = parts.pop() ?? "";
    for (const line of parts) this.add(line);
  }

  /** Flushes an unterminated last line. */
  end(): void {
    if (this.partial !== "") this.add(this.partial);
    this.partial = "";
  }

  text(): string {
    return this.lines.join("\n");
  }

  private add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.keep) this.lines.shift();
    this.onLog?.(line);
  }
}
