/** The queue's tables and functions live in the service's own schema (migrations/001 says why). */
export const queueSchema = "receipts";
