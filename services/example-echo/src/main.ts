import { apiRoutes, runMain, serve } from "@platform/runtime";
import { defaults, loadConfig } from "./config.js";
import { ExampleEchoService } from "./example-echo-service.js";

runMain("example-echo", async () => {
  const config = loadConfig(process.env);
  // Dependencies are injected here: a client per service it calls
  // (createDependencyClient with retry: "none", as checkout's main.ts does).
  return serve({ config: config.server, ...apiRoutes(defaults.apis, new ExampleEchoService()) });
});
