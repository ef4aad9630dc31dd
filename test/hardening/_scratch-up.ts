import { startTestPlatform } from "../support/platform.js";
import { writeFileSync } from "node:fs";
const p = await startTestPlatform({ env: { LOG_LEVEL: "info" } });
writeFileSync("/tmp/platform.json", JSON.stringify({ gateway: p.gatewayUrl, db: p.databaseUrl, services: Object.fromEntries(Object.entries(p.services).map(([k, v]) => [k, { url: v.url, admin: v.adminUrl, log: v.logFile }])) }, null, 1));
console.log("up");
process.on("SIGTERM", async () => { await p.close(); process.exit(0); });
setInterval(() => {}, 1 << 30);
