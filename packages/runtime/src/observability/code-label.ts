import { Code } from "@connectrpc/connect";

const codeNames = new Map<number, string>(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => [v as number, k.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c : `_${c}`)).toLowerCase()]),
);

/** The gRPC-style snake_case name of a code ("ok" for success), for metric labels and logs. */
export function codeLabel(code: Code | "ok"): string {
  if (code === "ok") return code;
  return codeNames.get(code) ?? "unknown";
}
