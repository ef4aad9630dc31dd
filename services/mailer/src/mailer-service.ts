import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";

/** Longest id GetItem accepts: bounds the work one request can ask for. */
export const maxIdLength = 64;

function validId(id: string): string {
  if (id === "") throw new ConnectError("id must not be empty", Code.InvalidArgument);
  if (id.length > maxIdLength) throw new ConnectError(`id must be at most ${maxIdLength} characters, got ${id.length}`, Code.InvalidArgument);
  return id;
}

export interface MailerDeps {
  /**
   * The items it serves, by id. Replace with what the service really
   * needs: a dependency client (createDependencyClient, retry: "none") or a
   * database (npm run new-service -- NAME --db shows how).
   */
  items: ReadonlyMap<string, string>;
}

/** The mailer service's API. Deadlines, admission, health, metrics and logs come from serve(). */
export class MailerService implements ServiceImpl<typeof mailerV1.MailerService> {
  constructor(private readonly deps: MailerDeps) {}

  async getItem(req: mailerV1.GetItemRequest): Promise<mailerV1.GetItemResponse> {
    const id = validId(req.id);
    const name = this.deps.items.get(id);
    if (name === undefined) throw new ConnectError(`no item ${JSON.stringify(id)}`, Code.NotFound);
    return create(mailerV1.GetItemResponseSchema, { item: { id, name } });
  }
}
