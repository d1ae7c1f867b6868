// kubeadm, as nearly every CAPI user bootstraps: the QuorumControlPlane's bootstrap template is the KubeadmConfigTemplate
// of config/samples/cluster-kubeadm.yaml, CAPI's kubeadm bootstrap provider (CABPK) writes the cloud-init, and each
// Machine runs real `kubeadm init` / `kubeadm join --control-plane` for Kubernetes 1.36 in namespaces of its own
// (e2e/provider/kubeadm/): kubeadm writes the certificates and static-pod manifests, a process kubelet runs them, kubeadm
// adds each joining etcd member as a learner and promotes it. The member and the Node are named after the host
// (`ip-10-200-1-3`), never after the Machine, as on clouds. Create 1 → scale 3 → 5 → 3.
import { readFileSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { pinnedVersions } from "../../test/env/tools.ts";
import { httpGet, kubeRequest } from "../../test/env/index.ts";
import type { Scenario } from "../lib/scenario.ts";
import type { ScenarioDefinition } from "./types.ts";

const VERSION = pinnedVersions().previousKubernetes;

type Bootstrap = "init" | "join --control-plane" | "other";

export const kubeadm: ScenarioDefinition = {
  name: "kubeadm",
  title: `kubeadm Machines (CABPK cloud-init, real kubeadm ${VERSION}, process kubelet): create 1 → 3 → 5 → 3`,
  async run(s) {
    const bootstrap = new Map<string, Bootstrap>();
    await s.setup({ replicas: 1, version: VERSION, kubeadm: true }, { kubeadmBootstrap: true });
    await recordBootstrap(s, bootstrap);
    for (const [from, to] of [
      [1, 3],
      [3, 5],
      [5, 3],
    ] as const) {
      await s.operation(`scale ${from}→${to}`, () => s.patch({ replicas: to }), { replicas: to });
      await recordBootstrap(s, bootstrap);
    }

    const kinds = [...bootstrap.values()];
    s.check(
      kinds.filter((kind) => kind === "init").length === 1 && kinds.every((kind) => kind !== "other"),
      `CABPK wrote kubeadm init for exactly one Machine and kubeadm join --control-plane for every other (${[...bootstrap].map(([machine, kind]) => `${machine}: ${kind}`).join(", ")})`,
    );
    const members = (await s.controlPlane()).status?.etcd?.members ?? [];
    const machineNames = new Set((await s.machines()).map((machine) => machine.metadata.name));
    s.check(
      members.length === 3 &&
        members.every((member) => /^ip-10-200-/.test(member.name) && !machineNames.has(member.name)),
      `every etcd member is named after its host, not its Machine, and Quorum maps each to its Machine (${members.map((member) => `${member.name}→${member.machine}`).join(", ")})`,
    );
    checkLearners(s);
    await checkStaticPods(s);
    await checkKubeadmConfig(s);
    return 3;
  },
};

/** What CABPK's bootstrap data tells each current Machine to run, remembered for Machines deleted later. */
async function recordBootstrap(s: Scenario, seen: Map<string, Bootstrap>): Promise<void> {
  for (const machine of await s.machines()) {
    const secret = machine.spec.bootstrap.dataSecretName;
    if (!secret || seen.has(machine.metadata.name)) continue;
    const response = await kubeRequest<{ data: Record<string, string> }>(
      s.stack.kubeConfig,
      `/api/v1/namespaces/${s.namespace}/secrets/${secret}`,
    );
    if (response.status !== 200) continue;
    const userData = Buffer.from(response.body.data.value, "base64").toString("utf8");
    const cloudConfig = parse(userData.replace(/^## template: jinja\n/, "")) as {
      runcmd?: string[];
      write_files?: { path: string; content: string }[];
    };
    const commands = cloudConfig.runcmd ?? [];
    const joinConfig = cloudConfig.write_files?.find((file) => file.path === "/run/kubeadm/kubeadm-join-config.yaml");
    const controlPlaneJoin = joinConfig !== undefined && /^controlPlane:/m.test(joinConfig.content);
    seen.set(
      machine.metadata.name,
      commands.some((command) => command.startsWith("kubeadm init "))
        ? "init"
        : commands.some((command) => command.startsWith("kubeadm join ")) && controlPlaneJoin
          ? "join --control-plane"
          : "other",
    );
  }
}

/**
 * Every running etcd and kube-apiserver is a process the kubelet started from the static-pod manifest kubeadm wrote on
 * that Machine: its arguments are the manifest's, and it lives in the Machine's network namespace.
 */
async function checkStaticPods(s: Scenario): Promise<void> {
  const processMachines = (await s.stack.processMachines(s.namespace)).filter(
    (machine) => !machine.metadata.deletionTimestamp,
  );
  const found: string[] = [];
  for (const machine of processMachines) {
    const kubeletPid = machine.status?.processes?.kubelet?.pid;
    const dir = join(
      s.stack.dir,
      "machines",
      s.namespace,
      s.cluster,
      `${machine.metadata.name}-${machine.metadata.uid.slice(0, 8)}`,
    );
    s.check(kubeletPid !== undefined, `${machine.metadata.name} reports its kubelet's pid`);
    const netns = readlinkSync(`/proc/${kubeletPid}/ns/net`);
    for (const component of ["etcd", "kube-apiserver"]) {
      const manifest = parse(readFileSync(join(dir, "root/etc/kubernetes/manifests", `${component}.yaml`), "utf8")) as {
        spec: { containers: { command?: string[]; args?: string[] }[] };
      };
      const container = manifest.spec.containers[0];
      const argv = [...(container.command ?? []).slice(1), ...(container.args ?? [])];
      const match = processesWithArgs(argv).filter((pid) => readlinkSync(`/proc/${pid}/ns/net`) === netns);
      s.check(
        match.length === 1,
        `${machine.metadata.name} (${machine.status?.hostName}) runs ${component} from the manifest kubeadm wrote, in its own network namespace (${match.length} process)`,
      );
      found.push(`${component}@${machine.status?.hostName}=${match[0]}`);
      s.watchedPids.push(...match);
      if (component === "etcd") {
        // kubeadm 1.36 pins an etcd 3.6 image; the kubelet runs the binary of that minor.
        const binary = realpathSync(`/proc/${match[0]}/exe`);
        s.check(
          /etcd-v3\.6\./.test(binary),
          `${machine.status?.hostName}'s etcd is the 3.6 kubeadm ${VERSION} pins (${binary})`,
        );
      }
    }
  }
  s.log(`static pods: ${found.join(", ")}`);
}

/**
 * kubeadm join added every new member itself, as a learner: each member that appeared after the first sample of the
 * quorum monitor (every 250 ms) was a learner when first seen, and is a voter now or was removed.
 */
function checkLearners(s: Scenario): void {
  const samples = s.monitor.samples.filter((sample) => sample.members.length > 0);
  const initial = new Set(samples[0]?.members.map((member) => member.id) ?? []);
  const firstSeen = new Map<string, boolean>();
  for (const sample of samples)
    for (const member of sample.members) if (!firstSeen.has(member.id)) firstSeen.set(member.id, member.learner);
  const joined = [...firstSeen].filter(([id]) => !initial.has(id));
  s.check(
    joined.length >= 4 && joined.every(([, learner]) => learner),
    `every member a join added (${joined.length}) was a learner when first seen (${joined.map(([id, learner]) => `${id}: ${learner ? "learner" : "voter"}`).join(", ")})`,
  );
}

/** PIDs whose arguments after argv[0] are exactly `argv`. */
function processesWithArgs(argv: string[]): number[] {
  const wanted = argv.join("\0");
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0$/, "").split("\0").slice(1);
      if (args.join("\0") === wanted) pids.push(Number(entry));
    } catch {
      // Exited meanwhile.
    }
  }
  return pids;
}

/** kubeadm init uploaded its ClusterConfiguration to the workload cluster, as KCP and `kubeadm join` read it. */
async function checkKubeadmConfig(s: Scenario): Promise<void> {
  const config = await s.workload.kubeconfig();
  const { status, body } = await httpGet(`${config.server}/api/v1/namespaces/kube-system/configmaps/kubeadm-config`, {
    ca: config.caPem,
    cert: config.certPem,
    key: config.keyPem,
  });
  const clusterConfiguration =
    status === 200 ? (JSON.parse(body) as { data?: { ClusterConfiguration?: string } }).data?.ClusterConfiguration : "";
  s.check(
    status === 200 && clusterConfiguration?.includes(`kubernetesVersion: ${VERSION}`),
    `the workload cluster has kube-system/kubeadm-config with kubernetesVersion ${VERSION} (HTTP ${status})`,
  );
}
