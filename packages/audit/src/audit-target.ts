import { multiplyAttempts } from "./attempts.js";
import { buildCallGraph } from "./call-graph.js";
import type { Answer, Target } from "./model.js";
import {
  backoffAndCap,
  deadlineTravels,
  intakeRehearsed,
  isolationPerDependency,
  oneLayerRetries,
  queuesBounded,
  retriedWritesCarryKeys,
  timeoutsShrinkInward,
} from "./questions.js";

export interface TargetAudit {
  target: Target;
  /** The call graph, one line per hop. */
  graph: string[];
  answers: Answer[];
  pass: boolean;
}

/** Answers the seven questions (and isolation) for one configuration. */
export async function auditTarget(target: Target): Promise<TargetAudit> {
  const graph = buildCallGraph(target);
  const attempts = await multiplyAttempts(graph);
  const answers: Answer[] = [
    timeoutsShrinkInward(graph),
    deadlineTravels(graph),
    oneLayerRetries(graph, attempts),
    backoffAndCap(graph),
    queuesBounded(graph),
    intakeRehearsed(graph),
    await retriedWritesCarryKeys(graph),
    isolationPerDependency(graph),
  ];
  if (target.refused.length > 0) {
    answers.unshift({
      question: "0. Does every service accept its configuration?",
      pass: false,
      facts: [],
      problems: target.refused.map((r) => ({ message: `${r.service} would refuse to start: ${r.problems.join("; ")}`, where: r.where })),
    });
  }
  const lines = graph.hops.map((h) => `${h.caller.name} -> ${h.callee?.name ?? `? (${h.dependency.baseUrl})`}`);
  for (const s of graph.services.filter((x) => x.database)) lines.push(`${s.name} -> database`);
  return { target, graph: lines, answers, pass: answers.every((a) => a.pass) };
}
