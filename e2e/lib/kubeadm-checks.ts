// What a kubeadm control plane at a given Kubernetes version looks like from the outside, as pure verdicts over what
// the scenarios observed (e2e/lib/kubeadm-nodes.ts reads the files and processes): each Machine's static-pod manifests
// name the images kubeadm pins for that version, each running component is the binary of that version, the workload
// cluster's kubeadm-config says that version, kube-proxy's DaemonSet runs that version's image. Every failure names
// the Machine (and its host), the file or process, and the value seen next to the one expected.
import { parse } from "yaml";

/** The control-plane components kubeadm writes a static-pod manifest for, each in its own file. */
export const CONTROL_PLANE_COMPONENTS = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
] as const;
export type Component = (typeof CONTROL_PLANE_COMPONENTS)[number];

/** `/etc/kubernetes/manifests/<component>.yaml` of one Machine, as read from its root directory. */
export interface ManifestObservation {
  component: Component;
  file: string;
  image?: string;
  /** The container's command after command[0], then its args: what the process must run with. */
  argv?: string[];
  /** Why the manifest could not be read (missing, not YAML, no container). */
  error?: string;
}

/** A process of the Machine's network namespace whose argv[0] is one of the components' binaries. */
export interface ProcessObservation {
  component: Component;
  pid: number;
  /** realpath of /proc/<pid>/exe. */
  exe: string;
  /** argv after argv[0]. */
  argv: string[];
}

export interface NodeObservation {
  machine: string;
  host: string;
  manifests: ManifestObservation[];
  processes: ProcessObservation[];
}

/** What a control plane at `version` runs: kubeadm's images for it, and the local binary each image maps to. */
export interface ExpectedControlPlane {
  version: string;
  /** Component (and kube-proxy) → the image `kubeadm config images list --kubernetes-version <version>` prints. */
  images: Record<Component | "kube-proxy", string>;
  /** Component → { link: bin/<name>, path: its realpath }. */
  binaries: Record<Component, { link: string; path: string }>;
}

export interface Verdict {
  /** One line per check that held, for the scenario's list of checks. */
  passed: string[];
  /** One line per thing that is wrong, each naming the Machine, the file or process, and the values. */
  failed: string[];
}

/**
 * `kubeadm config images list` output → image by repository name (`registry.k8s.io/etcd:3.7.0-0` → etcd). Throws
 * when a control-plane component or kube-proxy is missing: comparing against an absent image would pass nothing.
 */
export function parseImageList(text: string): Record<Component | "kube-proxy", string> {
  const byRepository = new Map<string, string>();
  for (const line of text.split("\n").map((entry) => entry.trim())) {
    const match = /^(?:[^\s:]*\/)?([a-z0-9-]+):[^\s/]+$/.exec(line);
    if (match) byRepository.set(match[1], line);
  }
  const wanted = [...CONTROL_PLANE_COMPONENTS, "kube-proxy"] as const;
  const missing = wanted.filter((name) => !byRepository.has(name));
  if (missing.length > 0)
    throw new Error(`kubeadm config images list printed no image for ${missing.join(", ")}; it printed:\n${text}`);
  return Object.fromEntries(wanted.map((name) => [name, byRepository.get(name)!])) as Record<
    Component | "kube-proxy",
    string
  >;
}

/**
 * Every Machine's four manifests name the expected images; each component runs as exactly the manifest's command
 * line, from the expected binary, in the Machine's network namespace.
 */
export function controlPlaneVerdict(nodes: NodeObservation[], expected: ExpectedControlPlane): Verdict {
  const failed: string[] = [];
  const seenImages = new Set<string>();
  const seenBinaries = new Set<string>();
  let processCount = 0;
  if (nodes.length === 0) failed.push("no kubeadm Machine to inspect (no ProcessMachine reported a kubelet)");
  for (const node of nodes) {
    const where = `Machine ${node.machine} (${node.host})`;
    for (const component of CONTROL_PLANE_COMPONENTS) {
      const manifest = node.manifests.find((entry) => entry.component === component);
      const image = expected.images[component];
      if (!manifest || manifest.error !== undefined) {
        failed.push(`${where}: ${manifest?.file ?? `${component}.yaml`}: ${manifest?.error ?? "not read"}`);
      } else if (manifest.image !== image) {
        failed.push(`${where}: ${manifest.file} names image ${manifest.image}, expected ${image}`);
      } else {
        seenImages.add(image);
      }
      const binary = expected.binaries[component];
      const processes = node.processes.filter((entry) => entry.component === component);
      if (processes.length === 0) {
        failed.push(`${where}: no ${component} process runs in its network namespace`);
      } else if (processes.length > 1) {
        failed.push(
          `${where}: ${processes.length} ${component} processes run in its network namespace (pids ${processes.map((entry) => entry.pid).join(", ")}), expected 1`,
        );
      }
      for (const process of processes) {
        processCount++;
        if (process.exe !== binary.path) {
          failed.push(
            `${where}: ${component} pid ${process.pid} runs ${process.exe}, expected ${binary.path} (${binary.link})`,
          );
        } else {
          seenBinaries.add(binary.link);
        }
        const difference = manifest?.argv ? firstDifference(process.argv, manifest.argv) : undefined;
        if (difference)
          failed.push(
            `${where}: ${component} pid ${process.pid} does not run the arguments of ${manifest!.file}: ${difference}`,
          );
      }
    }
  }
  const machines = nodes.map((node) => `${node.machine} (${node.host})`).join(", ");
  const passed =
    failed.length === 0
      ? [
          `every Machine's static-pod manifests name kubeadm's ${expected.version} images (${[...seenImages].join(", ")}): ${machines}`,
          `every Machine runs each control-plane component once, from the ${expected.version} binary (${[...seenBinaries].join(", ")}) with its manifest's arguments, in its own network namespace (${processCount} processes)`,
        ]
      : [];
  return { passed, failed };
}

/** Where a process's arguments part from the manifest's, in words, or undefined if they agree. */
function firstDifference(actual: string[], wanted: string[]): string | undefined {
  for (let index = 0; index < Math.max(actual.length, wanted.length); index++) {
    if (actual[index] !== wanted[index])
      return `argument ${index + 1} is ${JSON.stringify(actual[index] ?? null)}, the manifest has ${JSON.stringify(wanted[index] ?? null)}`;
  }
  return undefined;
}

/** The workload cluster's `kube-system/kubeadm-config` (HTTP status and body of a GET) says `kubernetesVersion`. */
export function kubeadmConfigVerdict(status: number, body: string, version: string): Verdict {
  const subject = "the workload cluster's kube-system/kubeadm-config ConfigMap";
  if (status !== 200) return { passed: [], failed: [`${subject}: GET answered HTTP ${status}: ${body.slice(0, 200)}`] };
  const text = (JSON.parse(body) as { data?: { ClusterConfiguration?: string } }).data?.ClusterConfiguration;
  if (!text) return { passed: [], failed: [`${subject} has no data.ClusterConfiguration`] };
  const seen = (parse(text) as { kubernetesVersion?: string } | null)?.kubernetesVersion;
  return seen === version
    ? { passed: [`${subject}'s ClusterConfiguration says kubernetesVersion: ${seen}`], failed: [] }
    : {
        passed: [],
        failed: [`${subject}'s ClusterConfiguration says kubernetesVersion: ${seen}, expected ${version}`],
      };
}

/** The workload cluster's `kube-system/kube-proxy` DaemonSet (a GET's status and body) runs `image`. */
export function kubeProxyVerdict(status: number, body: string, image: string): Verdict {
  const subject = "the workload cluster's kube-system/kube-proxy DaemonSet";
  if (status === 404)
    return { passed: [], failed: [`${subject} does not exist (HTTP 404): kubeadm init's addon phase creates it`] };
  if (status !== 200) return { passed: [], failed: [`${subject}: GET answered HTTP ${status}: ${body.slice(0, 200)}`] };
  const containers =
    (JSON.parse(body) as { spec?: { template?: { spec?: { containers?: { name: string; image: string }[] } } } }).spec
      ?.template?.spec?.containers ?? [];
  const container = containers.find((entry) => entry.name === "kube-proxy");
  if (!container)
    return {
      passed: [],
      failed: [`${subject} has no container kube-proxy (${containers.map((entry) => entry.name).join(", ")})`],
    };
  return container.image === image
    ? { passed: [`${subject} runs ${container.image}`], failed: [] }
    : { passed: [], failed: [`${subject}'s container kube-proxy runs image ${container.image}, expected ${image}`] };
}

/** Several verdicts as one. */
export function combine(...verdicts: Verdict[]): Verdict {
  return {
    passed: verdicts.flatMap((verdict) => verdict.passed),
    failed: verdicts.flatMap((verdict) => verdict.failed),
  };
}
