import type { TargetAudit } from "./audit-target.js";

/** The audit of one configuration as text: the call graph, then each question with its answer, numbers and problems. */
export function formatTargetAudit(a: TargetAudit): string {
  const out = [`== ${a.target.name}: ${a.pass ? "PASS" : "FAIL"}  (${a.target.origin})`, `call graph: ${a.graph.join(", ")}`];
  for (const ans of a.answers) {
    out.push(`${ans.pass ? "pass" : "FAIL"}  ${ans.question}`);
    for (const f of ans.facts) out.push(`        ${f}`);
    for (const p of ans.problems) out.push(`      ! ${p.message}\n          -> ${p.where}`);
  }
  return out.join("\n");
}
