/** What the browser example reports in `window.exampleResult` (read by test/e2e/browser-client.test.ts). */
export interface ExampleResult {
  /** Set when the page has finished, successfully or not. */
  done: boolean;
  /** The SKUs listed. */
  products: string[];
  order?: { id: string; total: string };
  /** The placed order's receipt states as the page saw them, in order: PENDING (as placed), then SENT (live). */
  receiptStates: string[];
  /** Each failed call with its code's wire name and the advice shown. */
  errors: { what: string; code: string; advice: string }[];
}
