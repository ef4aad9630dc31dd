import { apiRoutes, runMain, serve } from "@platform/runtime";
import { defaults, loadConfig } from "./config.js";
import { MailerService } from "./mailer-service.js";

runMain("mailer", async () => {
  const config = loadConfig(process.env);
  const impl = new MailerService({ rememberKeys: config.rememberKeys });
  return serve({ config: config.server, ...apiRoutes(defaults.apis, impl) });
});
