import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** A profile's frame: where V8 saw the code (0-based line and column, as both profilers report them). */
export interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}

/**
 * Frames of a bundled service (services/<name>/dist/main.js, one file of the
 * platform's code and its npm packages: scripts/build/bundle.ts) mapped back
 * to the file they were bundled from, through the bundle's linked source
 * map, so that a profile of `npm start` or of the bench still says which
 * package a function belongs to. Frames outside a bundle, or whose position
 * the map does not cover, are returned as they are.
 */
export function sourceLocator(): (frame: Frame) => Frame {
  const maps = new Map<string, SourceMap | undefined>();
  const mapOf = (url: string): SourceMap | undefined => {
    if (!maps.has(url)) {
      let map: SourceMap | undefined;
      if (url.startsWith("file://") && url.endsWith(".js")) {
        const file = `${fileURLToPath(url)}.map`;
        if (existsSync(file)) map = new SourceMap(JSON.parse(readFileSync(file, "utf8")) as never);
      }
      maps.set(url, map);
    }
    return maps.get(url);
  };
  return (frame) => {
    const map = mapOf(frame.url);
    if (!map) return frame;
    const entry = map.findEntry(frame.lineNumber, frame.columnNumber ?? 0) as { originalSource?: string; originalLine?: number };
    if (!entry.originalSource) return frame;
    // Sources are relative to the map's own folder (esbuild writes them so).
    const source = entry.originalSource.startsWith("file://")
      ? entry.originalSource
      : pathToFileURL(resolve(dirname(fileURLToPath(frame.url)), entry.originalSource)).href;
    return { ...frame, url: source, lineNumber: entry.originalLine ?? frame.lineNumber };
  };
}
