import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ephemeralRangeStart, findFreePort, portReservationsDir } from "./free-port.js";

test("picks a port below the kernel's ephemeral range, where outgoing connections and listen(0) never land, and it can be bound", async () => {
  const below = ephemeralRangeStart();
  const ports = await Promise.all(Array.from({ length: 20 }, () => findFreePort("127.0.0.1")));
  for (const port of ports) assert.ok(port >= 10_000 && port < below, `${port} in [10000, ${below})`);
  // Random, not a counter: two test processes starting together do not pick the same ports.
  assert.ok(new Set(ports).size >= 18, `${new Set(ports).size} distinct of 20`);
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(ports[0], "127.0.0.1", resolve));
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test("on Linux the range is read from the kernel", { skip: process.platform !== "linux" && "Linux only" }, () => {
  const [first] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/);
  assert.equal(ephemeralRangeStart(), Number(first));
});

test("a port handed out is reserved in PLATFORM_PORT_RESERVATIONS's folder (npm test points it at the system's temporary folder), else in the temporary folder", async () => {
  assert.equal(portReservationsDir({ PLATFORM_PORT_RESERVATIONS: "/somewhere/ports" }), "/somewhere/ports");
  assert.equal(portReservationsDir({ PLATFORM_PORT_RESERVATIONS: "" }), join(tmpdir(), "platform-free-ports"));
  const port = await findFreePort("127.0.0.1");
  assert.equal(readFileSync(join(portReservationsDir(), String(port)), "utf8"), String(process.pid));
});
