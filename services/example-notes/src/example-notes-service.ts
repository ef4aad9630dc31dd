import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Database } from "@platform/database";
import { exampleNotesV1 } from "@platform/proto";

/** Limits of one note, declared in example_notes.proto (the table's CHECKs say the same). */
export const limits = { id: 64, text: 1000 } as const;

interface NoteRow {
  id: string;
  text: string;
}

/**
 * The example-notes service's API, over its own schema. Every statement
 * runs under the caller's deadline and is cancelled when the caller goes
 * away (@platform/database); deadlines, admission, health, metrics and logs
 * come from serve(), and the request's rules (example_notes.proto) are
 * checked before a handler runs.
 */
export class ExampleNotesService implements ServiceImpl<typeof exampleNotesV1.ExampleNotesService> {
  constructor(private readonly db: Pick<Database, "transaction">) {}

  async putNote(req: exampleNotesV1.PutNoteRequest): Promise<exampleNotesV1.PutNoteResponse> {
    const { id, text } = req.note!;
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
    const id = req.id;
    const result = await this.db.transaction((tx) => tx.query<NoteRow>("SELECT id, text FROM example_notes.notes WHERE id = $1", [id]), { readOnly: true });
    const row = result.rows[0];
    if (row === undefined) throw new ConnectError(`no note ${JSON.stringify(id)}`, Code.NotFound);
    return create(exampleNotesV1.GetNoteResponseSchema, { note: row });
  }
}
