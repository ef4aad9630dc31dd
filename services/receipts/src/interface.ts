import type { Database } from "@platform/database";
import type { Logger as Pino } from "@platform/runtime";

/**
 * Lets each role in `roles` (the orders service's) call the two functions
 * that are this service's interface, and nothing else of its schema. A role
 * that does not exist (a deployment where every service shares one login)
 * is skipped with a warning.
 */
export async function openInterface(db: Pick<Database, "transaction">, roles: readonly string[], logger: Pino): Promise<void> {
  await db.transaction(async (tx) => {
    for (const role of roles) {
      const r = await tx.query<{ grantable: boolean }>("SELECT rolname <> current_user AS grantable FROM pg_roles WHERE rolname = $1", [role]);
      if (r.rows[0]?.grantable !== true) {
        logger.warn({ role }, "no such role apart from this service's own: enqueue_receipt not granted to it");
        continue;
      }
      // The name was checked to be a plain identifier (config.ts).
      await tx.query(`GRANT USAGE ON SCHEMA receipts TO ${role}`);
      await tx.query(`GRANT EXECUTE ON FUNCTION receipts.enqueue_receipt(uuid), receipts.receipt_status(uuid) TO ${role}`);
    }
  });
}
