import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@platform/database";
import { exampleNotesV1 } from "@platform/proto";

/** Limits of one note (the table's CHECKs say the same): they bound the work one request can ask for. */
export const limits = { id: 64, text: 1000 } as const;

function checkLength(field: keyof typeof limits, value: string): string {
  if (value === "") throw new ConnectError(`${field} must not be empty`, Code.InvalidArgument);
  if (value.length > limits[field]) throw new ConnectError(`${field} must be at most ${limits[field]} characters, got ${value.length}`, Code.InvalidArgument);
  return value;
}

interface NoteRow {
  id: string;
  text: string;
}

/**
 * The example-notes service's API, over its own schema. Every statement
 * runs under the caller's deadline and is cancelled when the caller goes
 * away (@platform/database); deadlines, admission, health, metrics and logs
 * come from serve().
 */
export class ExampleNotesService implements ServiceImpl<typeof exampleNotesV1.ExampleNotesService> {
  constructor(private readonly db: Pick<Database, "transaction">) {}

  async putNote(req: exampleNotesV1.PutNoteRequest): Promise<exampleNotesV1.PutNoteResponse> {
    const id = checkLength("id", req.note?.id ?? "");
    const text = checkLength("text", req.note?.text ?? "");
    // One statement, idempotent: the same request again leaves the same row.
    const result = await this.db.transaction((tx) =>
      tx.query<NoteRow>("INSERT INTO example_notes.notes (id, text) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET text = EXCLUDED.text RETURNING id, text", [
        id,
        text,
      ]),
    );
    return create(exampleNotesV1.PutNoteResponseSchema, { note: result.rows[0] });
  }

  async getNote(req: exampleNotesV1.GetNoteRequest): Promise<exampleNotesV1.GetNoteResponse> {
    const id = checkLength("id", req.id);
    const result = await this.db.transaction((tx) => tx.query<NoteRow>("SELECT id, text FROM example_notes.notes WHERE id = $1", [id]), { readOnly: true });
    const row = result.rows[0];
    if (row === undefined) throw new ConnectError(`no note ${JSON.stringify(id)}`, Code.NotFound);
    return create(exampleNotesV1.GetNoteResponseSchema, { note: row });
  }
}
