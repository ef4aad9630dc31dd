/**
 * What a .heapprofile (V8's sampling heap profiler, lab/profile/heap-profile.mjs,
 * counting objects the garbage collector has freed since) says, as text:
 * bytes allocated, by the package that asked for them, per request when the
 * request count is known. Allocations made inside node's own modules or by
 * V8 builtins (a Promise, a Map, an AbortSignal) are booked to the nearest
 * caller outside them: `new Promise` in connect-es is connect-es's.
 *
 *   node --import tsx lab/profile/summarize-heap-profile.ts <file.heapprofile> [requests]
 */
import { fileURLToPath } from "node:url";
import { type Frame, sourceLocator } from "./source-location.js";
import { placeOf, profileArguments } from "./summarize-profile.js";

interface HeapNode {
  callFrame: Frame;
  selfSize: number;
  children: HeapNode[];
}
export interface HeapProfile {
  head: HeapNode;
}

export interface HeapSummary {
  /** Bytes allocated in the window (sampled, scaled by V8 to an estimate of all). */
  bytes: number;
  /** Bytes by place (placeOf), largest first. */
  places: Array<[string, number]>;
}

/** A place that allocates on behalf of its caller: node's own modules, V8's builtins and pseudo-frames. */
const onBehalfOfCaller = (place: string) => place.startsWith("node:") || place.startsWith("(");

export function summarizeHeapProfile(profile: HeapProfile): HeapSummary {
  const locate = sourceLocator();
  const byPlace = new Map<string, number>();
  let bytes = 0;
  const walk = (node: HeapNode, caller: string): void => {
    const own = placeOf(locate(node.callFrame));
    const place = onBehalfOfCaller(own) && caller !== "" ? caller : own;
    if (node.selfSize > 0) {
      bytes += node.selfSize;
      byPlace.set(place, (byPlace.get(place) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, onBehalfOfCaller(own) ? caller : own);
  };
  walk(profile.head, "");
  return { bytes, places: [...byPlace.entries()].sort((a, b) => b[1] - a[1]) };
}

/** The summary as text: KiB per request when `requests` is given, else KiB in the window. */
export function renderHeapSummary(title: string, s: HeapSummary, requests: number | undefined, top = 12): string {
  const per = (b: number) => `${(b / 1024 / (requests ?? 1)).toFixed(1).padStart(7)} KiB${requests ? "/req" : ""}`;
  const lines = [`${title}: allocated ${per(s.bytes)}${requests ? ` (${requests} requests)` : ""}`];
  for (const [k, b] of s.places.slice(0, top)) lines.push(`    ${per(b)}  ${((b / s.bytes) * 100).toFixed(1).padStart(5)}%  ${k}`);
  return lines.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { file, profile, requests } = profileArguments("summarize-heap-profile.ts <file.heapprofile> [requests]");
  console.log(renderHeapSummary(file, summarizeHeapProfile(profile as HeapProfile), requests, 25));
}
