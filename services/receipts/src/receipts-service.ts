import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@platform/database";
import { receiptsV1 } from "@platform/proto";

/** Longest id GetItem accepts: bounds the work one request can ask for. */
export const maxIdLength = 64;

function validId(id: string): string {
  if (id === "") throw new ConnectError("id must not be empty", Code.InvalidArgument);
  if (id.length > maxIdLength) throw new ConnectError(`id must be at most ${maxIdLength} characters, got ${id.length}`, Code.InvalidArgument);
  return id;
}

interface ItemRow {
  id: string;
  name: string;
}

/**
 * The receipts service's API, over its own schema (receipts). Every
 * statement runs under the caller's deadline and is cancelled when the
 * caller goes away (see @platform/database).
 */
export class ReceiptsService implements ServiceImpl<typeof receiptsV1.ReceiptsService> {
  constructor(private readonly db: Pick<Database, "transaction">) {}

  async getItem(req: receiptsV1.GetItemRequest): Promise<receiptsV1.GetItemResponse> {
    const id = validId(req.id);
    const result = await this.db.transaction((tx) => tx.query<ItemRow>("SELECT id, name FROM receipts.items WHERE id = $1", [id]), { readOnly: true });
    const row = result.rows[0];
    if (row === undefined) throw new ConnectError(`no item ${JSON.stringify(id)}`, Code.NotFound);
    return create(receiptsV1.GetItemResponseSchema, { item: { id: row.id, name: row.name } });
  }
}
