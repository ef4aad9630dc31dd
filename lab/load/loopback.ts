/** Load tests target this machine only: throws unless `url`'s host is a loopback address. `who` names the tool in the error. */
export function assertLoopback(url: string, who: string): void {
  const host = new URL(url).hostname;
  if (!["127.0.0.1", "localhost", "[::1]", "::1"].includes(host)) throw new Error(`${who}: refusing non-loopback target ${url}`);
}
