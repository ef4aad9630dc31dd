import { runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { MailerService } from "./mailer-service.js";
import { routes, services } from "./routes.js";

runMain("mailer", async () => {
  const config = loadConfig(process.env);
  const impl = new MailerService({ rememberKeys: config.rememberKeys });
  return serve({ config: config.server, services, routes: routes(impl) });
});
