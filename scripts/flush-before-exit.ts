/**
 * Loaded into every test file's process (scripts/run-test-files.ts passes
 * it to node's runner as `--import`): lets the process's last test events
 * reach the runner before it exits.
 *
 * The runner ends each file's process once its tests are done
 * (`forceExit`, so that a file that leaves a timer or a server open cannot
 * hold the run). node's force exit calls process.exit() while the file's
 * last events may still be on their way to stdout, and drops them
 * (nodejs/node#64833, open; nodejs/node#64857 proposes waiting a turn of
 * the event loop first). The parent then counts fewer tests than ran, and
 * exits 0: 12 files of 50 empty tests, 4 at a time, reported 470 to 568 of
 * their 600 results; with this module, 600 of 600 (test/test-runner.test.ts
 * holds that). A failing test could not hide that way (its file exits 1),
 * but a skip or a todo could.
 *
 * So the first process.exit() waits a few turns of the event loop and for
 * stdout to drain, then exits with the code it was given.
 */
const exit = process.exit.bind(process);
let exiting = false;

process.exit = ((code?: number | string | null) => {
  if (exiting) return exit(code ?? undefined);
  exiting = true;
  if (code !== undefined && code !== null) process.exitCode = code;
  const done = () => exit();
  const afterTurns = (n: number): void => {
    if (n > 0) {
      setImmediate(() => afterTurns(n - 1));
      return;
    }
    if (process.stdout.writableLength > 0) process.stdout.once("drain", done);
    else done();
  };
  afterTurns(3);
}) as typeof process.exit;
