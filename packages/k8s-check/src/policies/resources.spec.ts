import { describe } from "node:test";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container } from "../testing/fixture.js";
import { resources } from "./resources.js";

describe("policy: resources", () => {
  passesValidPlatform(resources);
  flags(resources, "no memory limit", /orders.*resources\.limits\.memory is required/, (o) => delete container(o, "orders").resources?.limits?.["memory"]);
  flags(resources, "no CPU request", /gateway.*resources\.requests\.cpu is required/, (o) => delete container(o, "gateway").resources?.requests?.["cpu"]);
  flags(resources, "no resources at all", /checkout.*resources\.limits\.cpu is required/, (o) => delete container(o, "checkout").resources);
});
