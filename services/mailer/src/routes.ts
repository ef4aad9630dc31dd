import type { ConnectRouter } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";
import type { MailerService } from "./mailer-service.js";

export const services = [mailerV1.MailerService];

export function routes(impl: MailerService) {
  return (router: ConnectRouter) => {
    router.service(mailerV1.MailerService, impl);
  };
}
