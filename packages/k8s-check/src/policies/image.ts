import { containerWhere } from "../manifests.js";
import { splitImage } from "../objects.js";
import { withContainer, type Policy } from "./policy.js";

export const image: Policy = {
  name: "image",
  rule: "Every image is pinned by a tag other than latest, or a digest (set by the overlay's images).",
  check(m) {
    const out: string[] = [];
    for (const w of withContainer(m)) {
      const ref = splitImage(w.container.image ?? "");
      if ((ref.tag === undefined || ref.tag === "latest") && ref.digest === undefined) {
        out.push(`${containerWhere(w)}: image ${w.container.image} needs a tag other than latest (set it in the overlay's images)`);
      }
    }
    return out;
  },
};
