/**
 * A tiny service for tests that need a real serve() with a unary and a
 * streaming method: test.v1.Counter { Get (unary), Count (server streaming) },
 * both google.protobuf.Empty -> Empty, built at run time (no generated code).
 */
import { create, createFileRegistry, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, file_google_protobuf_empty } from "@bufbuild/protobuf/wkt";

export const Counter: DescService = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "test/v1/counter.proto",
    package: "test.v1",
    syntax: "proto3",
    dependency: ["google/protobuf/empty.proto"],
    service: [
      {
        name: "Counter",
        method: [
          { name: "Get", inputType: ".google.protobuf.Empty", outputType: ".google.protobuf.Empty" },
          { name: "Count", inputType: ".google.protobuf.Empty", outputType: ".google.protobuf.Empty", serverStreaming: true },
        ],
      },
    ],
  }),
  () => file_google_protobuf_empty,
).getService("test.v1.Counter")!;
