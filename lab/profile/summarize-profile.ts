/**
 * What a .cpuprofile (V8's sampling profiler: lab/profile/cpu-profile.mjs)
 * says, as text: busy CPU, and the self time of the top functions and of
 * the packages they live in (a bundled service's through its source map),
 * per request when the request count is known.
 *
 *   node --import tsx lab/profile/summarize-profile.ts <file.cpuprofile> [requests]
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Frame, sourceLocator } from "./source-location.js";

interface ProfileNode {
  id: number;
  callFrame: Frame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time that was not idle, µs. */
  busyUs: number;
  /** Self time by function ("name package/file:line"), µs, largest first. */
  functions: Array<[string, number]>;
  /** Self time by where the code lives (a package, node's own modules, GC...), µs, largest first. */
  places: Array<[string, number]>;
}

/** Where a frame's code lives: an npm package, one of ours, node's internals, or V8's pseudo-frames. */
export function placeOf(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1]!;
  const ours = /\/(packages|services|lab)\/([^/]+)\//.exec(url);
  if (ours) return ours[1] === "packages" ? `@platform/${ours[2]}` : `${ours[1]}/${ours[2]}`;
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/").slice(0, 2).join("/")}`;
  return url;
}

function shortUrl(url: string): string {
  const m = /(node_modules\/.*|packages\/.*|services\/.*|lab\/.*)$/.exec(url);
  return m ? m[1]! : url;
}

export function summarizeProfile(profile: CpuProfile): ProfileSummary {
  // A bundled service's frames, mapped back to the package they came from (source-location.ts).
  const locate = sourceLocator();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const fn = new Map<string, number>();
  const place = new Map<string, number>();
  let busyUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]!);
    // A sample's time is the delta to the next one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (!node || node.callFrame.functionName === "(idle)") continue;
    busyUs += us;
    const f = locate(node.callFrame);
    const key = f.url === "" ? f.functionName || "(anonymous)" : `${f.functionName || "(anonymous)"} ${shortUrl(f.url)}:${f.lineNumber + 1}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const p = placeOf(f);
    place.set(p, (place.get(p) ?? 0) + us);
  }
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  return { busyUs, functions: sorted(fn), places: sorted(place) };
}

/** The summary as text: µs per request when `requests` is given, else ms in the window. */
export function renderSummary(title: string, s: ProfileSummary, requests: number | undefined, top = 15): string {
  const per = (us: number) => (requests ? `${(us / requests).toFixed(1).padStart(7)} µs/req` : `${(us / 1000).toFixed(1).padStart(8)} ms`);
  const lines = [`${title}: busy ${per(s.busyUs)}${requests ? ` (${requests} requests)` : ""}`, "  by place:"];
  for (const [k, us] of s.places.slice(0, top)) lines.push(`    ${per(us)}  ${((us / s.busyUs) * 100).toFixed(1).padStart(5)}%  ${k}`);
  lines.push("  by function (self):");
  for (const [k, us] of s.functions.slice(0, top)) lines.push(`    ${per(us)}  ${((us / s.busyUs) * 100).toFixed(1).padStart(5)}%  ${k}`);
  return lines.join("\n");
}

/**
 * A summarizer's command line, `<file> [requests]`: the profile read as JSON and
 * the request count, or a usage message and exit 2.
 */
export function profileArguments(usage: string): { file: string; profile: unknown; requests: number | undefined } {
  const [file, requests] = process.argv.slice(2);
  if (!file) {
    console.error(`usage: ${usage}`);
    process.exit(2);
  }
  const n = requests === undefined ? undefined : Number(requests);
  if (n !== undefined && !(Number.isInteger(n) && n > 0)) {
    console.error("requests must be a positive integer");
    process.exit(2);
  }
  return { file, profile: JSON.parse(readFileSync(file, "utf8")), requests: n };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { file, profile, requests } = profileArguments("summarize-profile.ts <file.cpuprofile> [requests]");
  console.log(renderSummary(file, summarizeProfile(profile as CpuProfile), requests, 25));
}
