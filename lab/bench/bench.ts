/**
 * `npm run bench`: the platform against the plain Connect chain of the same
 * services (lab/plain-chain), in one run, on one PostgreSQL. Prints the
 * tables, writes JSON to reports/bench/<time>/ and the markdown table (with
 * this command line) to docs/bench/results.md.
 *
 *   npm run bench -- [--seconds 2] [--rounds 3] [--warmup-seconds 0.5] [--concurrency 32] [--quick] [--no-docs]
 *                    [--platform-log-level warn] [--from build|source] [--slice-ms 500] [--method PlaceOrder] [--jwt]
 *
 * --from: both chains from compiled JavaScript ("build", the default: `npm
 * run build` and the plain chain type-stripped first, compiled-chains.ts;
 * what `npm start` runs) or their TypeScript through tsx ("source"). Compiled,
 * the plain chain runs on connect-es as npm ships it (compiled-chains.ts
 * `pristineConnect`); from source it imports the repository's, patched.
 *
 * --slice-ms: how often the users of a shared high-concurrency leg switch
 * chain (cells.ts chainSliceMs); 0 runs the two chains' legs one after the
 * other. --method: only that method's cells, its hops and the ceiling.
 * Neither writes docs/.
 *
 * --quick: one round of short legs through the gateway only (no hops, no
 * database ceiling), as test/bench.test.ts runs it; it does not touch docs/.
 * --platform-log-level: an experiment (what the request logs cost); the
 * reference run keeps the services' default. Neither it nor --quick writes docs/.
 * --jwt: an experiment too (what authentication costs): the platform's
 * gateway verifies an access token on every call (AUTH_MODE=jwt, keys from
 * a local JWKS endpoint) and keeps a quota per tenant, set too high to
 * refuse anything (bench-tokens.ts). The plain chain is unchanged.
 */
import { execFileSync } from "node:child_process";
import { cpus } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchOptions } from "./options.js";
import { markdownReport, textReport, type RunInfo } from "./render.js";
import { runBench } from "./run-bench.js";
import { summarize } from "./summarize.js";
import { writeBenchFiles } from "./write-bench.js";

function currentCommit(): string {
  try {
    const hash = execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim() !== "";
    return dirty ? `${hash} (with uncommitted changes)` : hash;
  } catch {
    return "unknown";
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: "string" },
      rounds: { type: "string" },
      "warmup-seconds": { type: "string" },
      concurrency: { type: "string" },
      quick: { type: "boolean" },
      "no-docs": { type: "boolean" },
      "platform-log-level": { type: "string" },
      from: { type: "string" },
      "slice-ms": { type: "string" },
      method: { type: "string" },
      jwt: { type: "boolean" },
    },
    strict: true,
  });
  const opts = benchOptions(values, (line) => console.log(line));
  const commit = currentCommit();
  console.log(
    `bench: ${opts.rounds} round(s) x ${opts.seconds} s legs, ${opts.concurrency} clients at high concurrency` +
      `${opts.hops ? ", hops" : ""}${opts.ceiling ? ", database ceiling" : ""}; platform LOG_LEVEL ${opts.platformLogLevel}${opts.jwt ? "; JWT at the gateway" : ""}; commit ${commit}`,
  );
  const run = await runBench(opts);
  const summary = summarize(run);
  const text = textReport(summary);
  console.log(`\n${text}\n`);
  const info: RunInfo = {
    command: ["npm run bench", ...(argv.length > 0 ? ["--", ...argv] : [])].join(" "),
    commit,
    date: run.startedAt,
    durationSec: run.durationSec,
    machine: `${cpus().length} cores, Node ${process.version}`,
  };
  const written = writeBenchFiles({
    dir: join(process.cwd(), "reports", "bench", run.startedAt.replace(/[:.]/g, "-")),
    run,
    summary,
    text,
    info,
    markdown:
      values.quick ||
      values["no-docs"] ||
      values["platform-log-level"] !== undefined ||
      values["slice-ms"] !== undefined ||
      values.method !== undefined ||
      values.jwt
        ? undefined
        : { path: join(process.cwd(), "docs", "bench", "results.md"), content: markdownReport(summary, info) },
  });
  for (const w of written) console.log(`wrote ${w}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  },
);
