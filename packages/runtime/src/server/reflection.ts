import { toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import { healthV1, reflectionV1, reflectionV1alpha } from "@platform/proto";

/**
 * gRPC server reflection (grpc.reflection.v1, and v1alpha for older tools),
 * so that grpcurl, Postman and `buf curl` without `--schema` can list and
 * call a server's APIs without the proto files.
 *
 * Written here rather than taken from npm: the reflection servers there
 * (@grpc/reflection, grpc-server-reflection, nice-grpc-server-reflection)
 * plug into grpc-js or nice-grpc servers and protobufjs descriptors, and no
 * maintained one serves connect-es routers. @bufbuild/protobuf's descriptors
 * carry each file's FileDescriptorProto, so the service is a lookup table.
 *
 * It describes only what it is given: the gateway passes its public APIs,
 * so nothing about the internal services can be learnt through it.
 */

const reflectionServices: readonly string[] = [reflectionV1.ServerReflection.typeName, reflectionV1alpha.ServerReflection.typeName];

/**
 * Reflection is exempt from admission control and from "still starting", as
 * health is: a tool asking for the schema costs a table lookup, and the
 * schema does not wait for the database. It still passes the edge's
 * authentication and rate limit, like any API call.
 */
export function isReflectionService(typeName: string): boolean {
  return reflectionServices.includes(typeName);
}

/** One answer, in a shape both protocol versions accept (their messages have the same fields and numbers). */
type Answer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

type Question =
  | { case: "fileByFilename"; value: string }
  | { case: "fileContainingSymbol"; value: string }
  | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  | { case: "allExtensionNumbersOfType"; value: string }
  | { case: "listServices"; value: string }
  | { case: undefined; value?: undefined };

/** What a server's reflection can tell: its services, their files and everything those import. */
export class ReflectionIndex {
  private readonly serviceNames: string[];
  private readonly files = new Map<string, DescFile>();
  private readonly fileOfSymbol = new Map<string, DescFile>();
  /** Extension numbers per extended message, from the files described (ours declare none). */
  private readonly extensions = new Map<string, Map<number, DescFile>>();
  private readonly messages = new Set<string>();

  constructor(services: readonly DescService[]) {
    const described = [...services, healthV1.Health, reflectionV1.ServerReflection, reflectionV1alpha.ServerReflection];
    this.serviceNames = [...new Set(described.map((s) => s.typeName))];
    for (const s of described) this.addFile(s.file);
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    for (const type of nestedTypes(file)) {
      this.fileOfSymbol.set(type.typeName, file);
      if (type.kind === "service") for (const m of type.methods) this.fileOfSymbol.set(`${type.typeName}.${m.name}`, file);
      if (type.kind === "message") {
        this.messages.add(type.typeName);
        for (const f of type.fields) this.fileOfSymbol.set(`${type.typeName}.${f.name}`, file);
      }
      // Enum values are scoped like C++ enumerators: siblings of their enum (checkout.v1.ORDER_STATUS_PLACED).
      if (type.kind === "enum")
        for (const v of type.values) this.fileOfSymbol.set(`${type.typeName.slice(0, type.typeName.lastIndexOf(".") + 1)}${v.name}`, file);
      if (type.kind === "extension") {
        const byNumber = this.extensions.get(type.extendee.typeName) ?? new Map<number, DescFile>();
        byNumber.set(type.number, file);
        this.extensions.set(type.extendee.typeName, byNumber);
      }
    }
    for (const dep of file.dependencies) this.addFile(dep);
  }

  /**
   * Answers one request of a stream. `sent` holds the files this stream has
   * already received: the protocol lets a server skip them, and clients
   * (grpc-go's, buf's) keep what they were sent.
   */
  answer(question: Question, sent: Set<string>): Answer {
    switch (question.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: this.serviceNames.map((name) => ({ name })) } };
      case "fileByFilename": {
        const file = this.files.get(question.value);
        return file ? this.withDependencies(file, sent) : notFound(`file "${question.value}" not found`);
      }
      case "fileContainingSymbol": {
        const file = this.fileOfSymbol.get(question.value.replace(/^\./, ""));
        return file ? this.withDependencies(file, sent) : notFound(`symbol "${question.value}" not found`);
      }
      case "fileContainingExtension": {
        const { containingType, extensionNumber } = question.value;
        const file = this.extensions.get(containingType)?.get(extensionNumber);
        return file ? this.withDependencies(file, sent) : notFound(`extension ${extensionNumber} of "${containingType}" not found`);
      }
      case "allExtensionNumbersOfType": {
        if (!this.messages.has(question.value)) return notFound(`message type "${question.value}" not found`);
        const numbers = [...(this.extensions.get(question.value)?.keys() ?? [])].sort((a, b) => a - b);
        return { case: "allExtensionNumbersResponse", value: { baseTypeName: question.value, extensionNumber: numbers } };
      }
      default:
        return {
          case: "errorResponse",
          value: { errorCode: Code.InvalidArgument, errorMessage: "empty reflection request: set one of its message_request fields" },
        };
    }
  }

  /** The file first (clients expect the asked-for file at the front), then what it imports, transitively, minus what was sent. */
  private withDependencies(file: DescFile, sent: Set<string>): Answer {
    const out: Uint8Array[] = [];
    const visit = (f: DescFile, asked: boolean) => {
      if (sent.has(f.proto.name) && !asked) return;
      sent.add(f.proto.name);
      out.push(toBinary(FileDescriptorProtoSchema, f.proto));
      for (const dep of f.dependencies) visit(dep, false);
    };
    visit(file, true);
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
  }
}

function notFound(message: string): Answer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: message } };
}

/** Registers grpc.reflection.v1 and v1alpha, describing `services` (plus health and reflection themselves). */
export function registerReflectionService(router: ConnectRouter, services: readonly DescService[]): void {
  const index = new ReflectionIndex(services);
  router.service(reflectionV1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const req of requests) {
        yield { validHost: req.host, originalRequest: req, messageResponse: index.answer(req.messageRequest, sent) };
      }
    },
  });
  router.service(reflectionV1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const req of requests) {
        yield { validHost: req.host, originalRequest: req, messageResponse: index.answer(req.messageRequest, sent) };
      }
    },
  });
}
