/**
 * A supervisor for supervisor-gone.test.ts: starts one service under
 * ServiceProcess (as the launcher does: an IPC channel, stdout and stderr
 * piped into its log file), prints the service's pid once it serves, and
 * waits to be killed.
 *
 *   node --import tsx supervise-and-die.ts <entry> <log file> <port> <admin port>
 */
import { ServiceProcess } from "@platform/launcher";

const [entry, logFile, port, adminPort] = process.argv.slice(2);
if (!entry || !logFile || !port || !adminPort) throw new Error("usage: supervise-and-die.ts <entry> <log file> <port> <admin port>");
const service = new ServiceProcess({ name: "example-echo", entry, env: { HOST: "127.0.0.1", PORT: port, ADMIN_PORT: adminPort }, logFile }, {});
service.start();
await service.whenReady(60_000);
process.stdout.write(`${service.pid}\n`);
setInterval(() => {}, 60_000);
