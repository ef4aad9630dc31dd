import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findOverlays, kubectlPath, parseObjects, pinnedKubectlPath, renderKustomization } from "./render.js";

function withTree(files: Record<string, string>, fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "k8s-check-"));
  try {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, name, ".."), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  X: '1'\n";
const deployment =
  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector: {}\n  template:\n    spec:\n      containers:\n        - name: c\n          image: reg:5000/app:1\n";

describe("finding overlays", () => {
  test("every kustomization nothing else includes, without bases and components", () => {
    withTree(
      {
        "k8s/base/kustomization.yaml": "kind: Kustomization\nresources: [cm.yaml]\n",
        "k8s/components/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
        "k8s/overlays/dev/kustomization.yaml": "kind: Kustomization\nresources: [../../base]\ncomponents: [../../components/extra]\n",
        "k8s/overlays/prod/kustomization.yml": "resources:\n  - ../../base\n",
        "other/kustomization.yaml": "resources: [x.yaml]\n",
      },
      (dir) => assert.deepEqual(findOverlays(dir), [join(dir, "k8s/overlays/dev"), join(dir, "k8s/overlays/prod"), join(dir, "other")]),
    );
  });
});

describe("rendering with real kustomize", () => {
  test("namespace, images and patches as kustomize applies them", () => {
    withTree(
      {
        "base/kustomization.yaml": "kind: Kustomization\nresources: [d.yaml, cm.yaml]\n",
        "base/d.yaml": deployment,
        "base/cm.yaml": cm,
        "kustomization.yaml": [
          "kind: Kustomization",
          "namespace: ns",
          "resources: [base]",
          "images:",
          "  - name: reg:5000/app",
          "    newTag: '2'",
          "patches:",
          "  - target: {kind: ConfigMap}",
          "    patch: |-",
          "      - op: replace",
          "        path: /data/X",
          "        value: '3'",
          "",
        ].join("\n"),
      },
      (dir) => {
        const objects = renderKustomization(dir);
        assert.deepEqual(
          objects.map((o) => `${o.kind}/${o.metadata.name}@${o.metadata.namespace}`),
          ["ConfigMap/a@ns", "Deployment/d@ns"],
        );
        assert.deepEqual(objects[0]?.["data"], { X: "3" });
        assert.match(JSON.stringify(objects[1]), /"image":"reg:5000\/app:2"/);
      },
    );
  });

  test("a broken kustomization fails with kustomize's own message", () => {
    withTree({ "kustomization.yaml": "kind: Kustomization\nresources: [missing.yaml]\n" }, (dir) => {
      assert.throws(() => renderKustomization(dir), /kubectl kustomize .* failed: .*missing\.yaml/);
    });
  });
});

describe("what kustomize refuses", () => {
  test("the same object twice", () => {
    withTree({ "kustomization.yaml": "kind: Kustomization\nresources: [cm.yaml, again/cm.yaml]\n", "cm.yaml": cm, "again/cm.yaml": cm }, (dir) => {
      assert.throws(() => renderKustomization(dir), /failed: .*already registered id/);
    });
  });
});

describe("the kubectl to run", () => {
  test("KUBECTL wins; otherwise the pinned one, or a clear error", () => {
    assert.equal(kubectlPath({ KUBECTL: "/opt/kubectl" }), "/opt/kubectl");
    assert.equal(kubectlPath({}), pinnedKubectlPath); // the suite runs after `npm run setup:kubectl`
    assert.throws(() => kubectlPath({}, "/nonexistent/kubectl"), /kubectl is not installed at \/nonexistent\/kubectl: run `npm run setup:kubectl`/);
  });
  test("a kubectl that does not exist fails clearly", () => {
    withTree({ "kustomization.yaml": "kind: Kustomization\n" }, (dir) => {
      assert.throws(() => renderKustomization(dir, "/nonexistent/kubectl"), /kubectl kustomize .* failed: .*ENOENT/);
    });
  });
});

describe("parsing rendered YAML", () => {
  test("objects need apiVersion, kind and a name", () => {
    assert.deepEqual(parseObjects(`${cm}---\n`, "x").length, 1);
    assert.throws(() => parseObjects("kind: ConfigMap\nmetadata: {name: a}\n", "x"), /x document 1: not a Kubernetes object/);
    assert.throws(() => parseObjects("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "x"), /metadata.name is required/);
  });
});
