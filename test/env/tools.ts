// Where the harness finds its binaries and pinned versions (hack/versions.env, built by `make deps`).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface PinnedVersions {
  kubernetes: string;
  /** The other Kubernetes minor make deps builds (bin/<command>-<minor>), e.g. "v1.36.3". */
  previousKubernetes: string;
  capi: string;
  /** The etcd the tests run (bin/etcd), e.g. "v3.7.3". */
  etcd: string;
}

export function pinnedVersions(): PinnedVersions {
  const file = join(repoRoot, "hack/versions.env");
  const values = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const match = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (match) values.set(match[1], match[2].trim());
  }
  const read = (key: string) => {
    const value = values.get(key);
    if (!value) throw new Error(`${file} has no ${key}=: restore the file from git`);
    return value;
  };
  return {
    kubernetes: read("KUBERNETES_VERSION"),
    previousKubernetes: read("KUBERNETES_PREVIOUS_VERSION"),
    capi: read("CAPI_VERSION"),
    etcd: read("ETCD_VERSION"),
  };
}

/**
 * A binary `make deps` links into bin/. etcd is ETCD_VERSION, etcd-3.6 and etcd-3.7 name each minor; the Kubernetes
 * commands are KUBERNETES_VERSION, and <command>-<minor> names each of the two minors built.
 */
export function builtBinary(
  name:
    | "etcd"
    | "etcd-3.6"
    | "etcd-3.7"
    | KubernetesCommand
    | `${KubernetesCommand}-${string}`
    | "capi-manager"
    | "capi-kubeadm-bootstrap-manager"
    | "clusterctl"
    | "quorum-kubelet-portforward",
): string {
  const path = join(repoRoot, "bin", name);
  if (!existsSync(path)) {
    throw new Error(`${path} does not exist: run \`make deps\` to build it (cached in ~/.cache/quorum)`);
  }
  return path;
}

export type KubernetesCommand = "kube-apiserver" | "kube-controller-manager" | "kube-scheduler" | "kubeadm";

/** The etcd every test, e2e scenario and benchmark runs: bin/etcd (ETCD_VERSION), or QUORUM_ETCD if set. */
export function etcdBinary(): string {
  return process.env.QUORUM_ETCD || builtBinary("etcd");
}
