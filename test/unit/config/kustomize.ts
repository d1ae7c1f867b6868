// Renders config/ the way users and `make release-manifests` do: with kubectl's built-in kustomize.
import { execFileSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Any Kubernetes object from a manifest; tests narrow what they read. */
export interface ManifestObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** $KUBECTL, then bin/kubectl (from `make deps`, when it provides one), then kubectl on PATH. */
export function kubectlBinary(): string {
  const candidates = [
    process.env.KUBECTL,
    join(repoRoot, "bin/kubectl"),
    ...(process.env.PATH ?? "")
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, "kubectl")),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Try the next place.
    }
  }
  throw new Error(
    "no kubectl found (KUBECTL, bin/kubectl, PATH): config/ is rendered with kubectl's built-in kustomize; install kubectl or set KUBECTL",
  );
}

export function parseManifests(text: string, source: string): ManifestObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${source}: invalid YAML: ${doc.errors[0].message}`);
      return doc.toJS() as ManifestObject | null;
    })
    .filter((object): object is ManifestObject => object !== null);
}

/** `kubectl kustomize <dir>` parsed into objects; `dir` is relative to the repo root. */
export function kustomize(dir: string): ManifestObject[] {
  const text = execFileSync(kubectlBinary(), ["kustomize", join(repoRoot, dir)], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  return parseManifests(text, `kubectl kustomize ${dir}`);
}
