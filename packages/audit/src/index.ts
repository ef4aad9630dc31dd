export type { Answer, Problem, ServiceDescription, Target, TargetService } from "./model.js";
export { auditTarget, type TargetAudit } from "./audit-target.js";
export { formatTargetAudit } from "./report.js";
export { defaultsTarget } from "./sources/defaults.js";
export { composeTarget } from "./sources/compose.js";
export { kubernetesTarget, shippedOverlays } from "./sources/kubernetes.js";
export { liveTarget } from "./sources/live.js";
export { repoRoot } from "./service-modules.js";
export { advise, formatAdvice, scrape, type Advice, type Scrape } from "./advise/advise.js";
