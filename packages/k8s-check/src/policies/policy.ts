import type { Manifests, Workload } from "../manifests.js";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";

/** One deployment rule: every violation as a readable message naming the object; none when the manifests follow it. */
export interface Policy {
  name: string;
  /** What it asks, in a sentence (shown by docs and failures). */
  rule: string;
  check(m: Manifests): string[];
}

/** The workloads that have a pod and a container, for the rules about them. */
export function withContainer(m: Manifests): (Workload & { container: IContainer; pod: IPodSpec })[] {
  return m.workloads.filter((w): w is Workload & { container: IContainer; pod: IPodSpec } => w.container !== undefined && w.pod !== undefined);
}
