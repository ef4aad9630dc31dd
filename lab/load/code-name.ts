import { Code } from "@connectrpc/connect";

/** snake_case name of a Connect code, as the services label their metrics ("deadline_exceeded"). */
export function codeName(code: Code): string {
  const name = Code[code] as string | undefined;
  return name === undefined ? "unknown" : name.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c : `_${c}`)).toLowerCase();
}
