import { describe } from "node:test";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container } from "../testing/fixture.js";
import { image } from "./image.js";

describe("policy: image", () => {
  passesValidPlatform(image);
  flags(image, "untagged image", /gateway.*needs a tag other than latest/, (o) => (container(o, "gateway").image = "resilient-platform"));
  flags(image, "latest", /orders.*needs a tag other than latest/, (o) => (container(o, "orders").image = "registry.example.com:5000/platform:latest"));
});
