// Where the harness finds its binaries and pinned versions (hack/versions.env, built by `make deps`).
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface PinnedVersions {
  kubernetes: string;
  capi: string;
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
  return { kubernetes: read("KUBERNETES_VERSION"), capi: read("CAPI_VERSION") };
}

/** A binary `make deps` links into bin/ (kube-apiserver, kube-controller-manager, capi-manager, clusterctl). */
export function builtBinary(
  name: "kube-apiserver" | "kube-controller-manager" | "capi-manager" | "clusterctl",
): string {
  const path = join(repoRoot, "bin", name);
  if (!existsSync(path)) {
    throw new Error(`${path} does not exist: run \`make deps\` to build it (cached in ~/.cache/quorum)`);
  }
  return path;
}

/** An executable found on PATH (e.g. etcd from Debian's etcd-server package). */
export function binaryOnPath(name: string, hint: string): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this PATH entry.
    }
  }
  throw new Error(`${name} is not on PATH: ${hint}`);
}

export function etcdBinary(): string {
  return process.env.QUORUM_ETCD ?? binaryOnPath("etcd", "run `make deps` (installs Debian's etcd-server)");
}
