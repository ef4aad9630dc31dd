import { createServer } from "node:net";

/**
 * Asks the kernel for a free TCP port on `host`. Another process could take
 * it before postgres binds it; postgres then fails with a clear "could not
 * bind" in its log, which the caller sees in the start error.
 */
export function findFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, host, () => {
      const addr = server.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("embedded-postgres: no free port"))));
    });
  });
}
