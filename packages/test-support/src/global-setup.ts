/**
 * node's --test-global-setup module for `npm test` (scripts/test.ts passes
 * it when a selected file uses the shared platform): starts and stops the
 * run's shared platform (shared-platform-server.ts).
 *
 * node loads this module in the runner's process, where `--import tsx`
 * has not taken effect: node strips this file's types itself but resolves
 * no `.js` import to its `.ts` source, nor `@platform/*` through
 * tsconfig.json. So it registers tsx first, and imports the rest after.
 */
import { register } from "tsx/esm/api";

register();
const server = await import("./shared-platform-server.js");

export const globalSetup = server.globalSetup;
export const globalTeardown = server.globalTeardown;
