import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";

/** The lowest port the platform's free-port picker uses: clear of the well-known and registered ports most tools default to. */
const lowestPort = 10_000;

/**
 * Finds a free TCP port on `host` for a server that will bind it a little
 * later (postgres, a service process). Between the check and the bind,
 * something else could take the port; this picker makes that unlikely by
 * choosing, at random, a port BELOW the kernel's ephemeral range: the kernel
 * hands ports from that range to every outgoing connection and every
 * listen(0) on the machine, so a port from it (what listen(0) here would
 * return) is the one most likely to be taken in the meantime. That race
 * showed as EADDRINUSE in the end-to-end tests on a busy machine. If the
 * port is taken anyway, postgres or the service fails to start with a clear
 * bind error in its log.
 */
export async function findFreePort(host: string): Promise<number> {
  const below = ephemeralRangeStart();
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = lowestPort + Math.floor(Math.random() * (below - lowestPort));
    if ((await canListen(host, port)) && reserve(port)) return port;
  }
  // Everything we tried is busy: fall back to the kernel's choice.
  return listenAndRelease(host, 0);
}

/** How long a port handed out stays reserved for the process that asked: time enough to bind it. */
const reservationMs = 10 * 60_000;
/**
 * Shared by every process on the machine that picks ports this way, so
 * where it is must not follow a TMPDIR one of them changed: `npm test`
 * moves its temporary files into memory (scripts/test-tmpdir.ts) and sets
 * PLATFORM_PORT_RESERVATIONS to this folder as the system's temporary
 * folder gives it, so that its platforms and an `npm start` or a storm lab
 * running beside it still see each other's reservations.
 */
export function portReservationsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env["PLATFORM_PORT_RESERVATIONS"] || join(tmpdir(), "platform-free-ports");
}
const reservations = portReservationsDir();

/**
 * Reserves a port for this caller across processes: a port free now is free
 * for everyone, and two test files starting platforms at once once handed the
 * same port to two services (EADDRINUSE, restarted forever on that port). A
 * file per port, created exclusively, marks it taken; a reservation older than
 * `reservationMs` has long been bound or abandoned and is taken over.
 */
function reserve(port: number): boolean {
  const file = join(reservations, String(port));
  try {
    mkdirSync(reservations, { recursive: true });
    writeFileSync(file, String(process.pid), { flag: "wx" });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") return true; // no shared directory: as before
    try {
      if (Date.now() - statSync(file).mtimeMs < reservationMs) return false;
      writeFileSync(file, String(process.pid));
      return true;
    } catch {
      return false;
    }
  }
}

/** The first port of the kernel's ephemeral range (Linux reads it; others use the IANA range). */
export function ephemeralRangeStart(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > lowestPort + 1000) return first;
  } catch {
    // not Linux
  }
  return 49_152;
}

async function canListen(host: string, port: number): Promise<boolean> {
  try {
    await listenAndRelease(host, port);
    return true;
  } catch {
    return false;
  }
}

function listenAndRelease(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(port, host, () => {
      const addr = server.address();
      const bound = typeof addr === "object" && addr ? addr.port : 0;
      server.close(() => (bound > 0 ? resolve(bound) : reject(new Error("embedded-postgres: no free port"))));
    });
  });
}
