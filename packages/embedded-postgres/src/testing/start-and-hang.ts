// Fixture for the no-orphan test: starts postgres, reports it on stdout as
// one JSON line, then stays alive until it is killed.
import { startEmbeddedPostgres } from "../index.js";

const dataDir = process.argv[2];
if (!dataDir) throw new Error("usage: start-and-hang.ts <dataDir>");
const pg = await startEmbeddedPostgres({ dataDir });
process.stdout.write(`${JSON.stringify({ pid: pg.pid, url: pg.url })}\n`);
setInterval(() => {}, 60_000);
