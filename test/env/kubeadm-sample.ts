// The KubeadmConfigTemplate of config/samples/cluster-kubeadm.yaml: what users copy, so the integration test and the
// kubeadm e2e scenario bootstrap their Machines from exactly it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "./tools.ts";

export interface KubeadmConfigTemplateObject {
  apiVersion: string;
  kind: string;
  spec: Record<string, unknown>;
}

export function sampleKubeadmConfigTemplate(): KubeadmConfigTemplateObject {
  const path = join(repoRoot, "config/samples/cluster-kubeadm.yaml");
  const template = parseAllDocuments(readFileSync(path, "utf8"))
    .map((doc) => doc.toJS() as KubeadmConfigTemplateObject)
    .find((object) => object.kind === "KubeadmConfigTemplate");
  if (!template) throw new Error(`${path} has no KubeadmConfigTemplate`);
  return { apiVersion: template.apiVersion, kind: template.kind, spec: template.spec };
}
