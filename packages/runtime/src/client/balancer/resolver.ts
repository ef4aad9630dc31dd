import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

/** Answers a dependency's current addresses, as URL origins (`http://10.0.0.7:8082`). */
export type Resolver = () => Promise<string[]>;

/** A fixed list (local runs, tests): `<NAME>_ADDRESSES`. */
export function staticResolver(origins: readonly string[]): Resolver {
  const list = [...origins];
  return () => Promise.resolve(list);
}

/**
 * Every address a URL's host name resolves to: a Kubernetes headless
 * Service answers with one A record per ready pod, a ClusterIP Service with
 * one virtual address. IPv4 answers are preferred when there are both (a
 * `localhost` answers ::1 as well, where an IPv4-only server is not).
 */
export function dnsResolver(baseUrl: string): Resolver {
  const url = new URL(baseUrl);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0) return staticResolver([url.origin]);
  return async () => {
    const answers = await lookup(host, { all: true });
    const v4 = answers.filter((a) => a.family === 4);
    const chosen = v4.length > 0 ? v4 : answers;
    return [...new Set(chosen.map((a) => originOf(url, a.address)))];
  };
}

function originOf(url: URL, address: string): string {
  const host = isIP(address) === 6 ? `[${address}]` : address;
  return `${url.protocol}//${host}${url.port === "" ? "" : `:${url.port}`}`;
}
