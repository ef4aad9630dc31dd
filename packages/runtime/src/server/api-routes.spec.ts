import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport, type ServiceImpl } from "@connectrpc/connect";
import { exampleEchoV1, mailerV1 } from "@platform/proto";
import { apiRoutes, generatedService } from "./api-routes.js";

class Echo implements ServiceImpl<typeof exampleEchoV1.ExampleEchoService> {
  async echo(req: exampleEchoV1.EchoRequest) {
    return create(exampleEchoV1.EchoResponseSchema, { message: `echo: ${req.message}` });
  }
}

test("a manifest's api names resolve to the generated descriptors; an unknown one is refused naming where descriptors come from", () => {
  assert.equal(generatedService("mailer.v1.MailerService"), mailerV1.MailerService);
  assert.throws(() => generatedService("shop.v1.Nothing"), /shop\.v1\.Nothing: no generated service of that name in @platform\/proto/);
});

test("the listed apis are served by the implementation, then the extra routes, in that order", async () => {
  const mailer: Partial<ServiceImpl<typeof mailerV1.MailerService>> = {};
  const { services, routes } = apiRoutes(["example_echo.v1.ExampleEchoService"], new Echo(), [{ service: mailerV1.MailerService, impl: mailer }]);
  assert.deepEqual(
    services.map((s) => s.typeName),
    ["example_echo.v1.ExampleEchoService", "mailer.v1.MailerService"],
  );
  const transport = createRouterTransport(routes);
  const res = await createClient(exampleEchoV1.ExampleEchoService, transport).echo({ message: "hi" });
  assert.equal(res.message, "echo: hi");
  // The extra route is registered as given: a method it leaves out answers unimplemented.
  const err = await createClient(mailerV1.MailerService, transport)
    .sendReceipt({})
    .then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  assert.equal(err?.code, Code.Unimplemented);
});

test("an implementation that lacks a method of a listed api stops start-up, naming the api and the methods", () => {
  assert.throws(
    () => apiRoutes(["example_echo.v1.ExampleEchoService", "mailer.v1.MailerService"], new Echo()),
    /mailer\.v1\.MailerService: Echo does not implement sendReceipt \(service\.json lists the api under "apis"\)/,
  );
  assert.deepEqual(apiRoutes([], {}).services, []);
});
