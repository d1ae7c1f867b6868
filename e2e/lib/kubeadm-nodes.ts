// What the kubeadm scenarios read from kubeadm Machines and their workload cluster: CABPK's bootstrap data per Machine,
// the static-pod manifests in each Machine's root directory and the processes of its network namespace (/proc), the
// images kubeadm itself pins for a version, and objects of the workload API. Verdicts over them are pure
// (kubeadm-checks.ts).
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { basename, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { parse } from "yaml";
import { binaryForImage } from "../provider/kubeadm/static-pods.ts";
import { builtBinary, httpGet, kubeRequest, repoRoot } from "../../test/env/index.ts";
import {
  CONTROL_PLANE_COMPONENTS,
  combine,
  controlPlaneVerdict,
  kubeadmConfigVerdict,
  kubeProxyVerdict,
  parseImageList,
  type Component,
  type ExpectedControlPlane,
  type NodeObservation,
  type ProcessObservation,
  type Verdict,
} from "./kubeadm-checks.ts";
import type { Scenario } from "./scenario.ts";

export type Bootstrap = "init" | "join --control-plane" | "other";

/** What CABPK's bootstrap data tells each current Machine to run, remembered for Machines deleted later. */
export async function recordBootstrap(s: Scenario, seen: Map<string, Bootstrap>): Promise<void> {
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

/** CABPK wrote `kubeadm init` for exactly one Machine and `kubeadm join --control-plane` for every other. */
export function checkBootstrap(s: Scenario, seen: Map<string, Bootstrap>): void {
  const kinds = [...seen.values()];
  s.check(
    kinds.filter((kind) => kind === "init").length === 1 && kinds.every((kind) => kind !== "other"),
    `CABPK wrote kubeadm init for exactly one Machine and kubeadm join --control-plane for every other (${[...seen].map(([machine, kind]) => `${machine}: ${kind}`).join(", ")})`,
  );
}

/**
 * kubeadm join added every new member itself, as a learner: each member that appeared after the first sample of the
 * quorum monitor (every 250 ms) was a learner when first seen, and is a voter now or was removed.
 */
export function checkLearners(s: Scenario, atLeast: number): void {
  const samples = s.monitor.samples.filter((sample) => sample.members.length > 0);
  const initial = new Set(samples[0]?.members.map((member) => member.id) ?? []);
  const firstSeen = new Map<string, boolean>();
  for (const sample of samples)
    for (const member of sample.members) if (!firstSeen.has(member.id)) firstSeen.set(member.id, member.learner);
  const joined = [...firstSeen].filter(([id]) => !initial.has(id));
  s.check(
    joined.length >= atLeast && joined.every(([, learner]) => learner),
    `every member a join added (${joined.length}, at least ${atLeast} expected) was a learner when first seen (${joined.map(([id, learner]) => `${id}: ${learner ? "learner" : "voter"}`).join(", ")})`,
  );
}

/** One running kubeadm Machine: its names, its root directory (node paths) and its kubelet's network namespace. */
export interface KubeadmNode {
  machine: string;
  host: string;
  dir: string;
  kubeletPid: number;
  netns: string;
}

/** The kubeadm Machines the provider runs now (not deleting), with where their files and processes are. */
export async function kubeadmNodes(s: Scenario): Promise<KubeadmNode[]> {
  const processMachines = (await s.stack.processMachines(s.namespace)).filter(
    (machine) => !machine.metadata.deletionTimestamp,
  );
  return processMachines.map((machine) => {
    const kubeletPid = machine.status?.processes?.kubelet?.pid;
    s.check(kubeletPid !== undefined, `${machine.metadata.name} reports its kubelet's pid`);
    const name = `${machine.metadata.name}-${machine.metadata.uid.slice(0, 8)}`;
    return {
      machine: machine.metadata.name,
      host: machine.status?.hostName ?? "?",
      dir: join(s.stack.dir, "machines", s.namespace, s.cluster, name),
      kubeletPid: kubeletPid!,
      netns: readlinkSync(`/proc/${kubeletPid}/ns/net`),
    };
  });
}

/** The four manifests kubeadm wrote on the Machine (its root directory), and its processes running a component. */
export function observeNode(node: KubeadmNode): NodeObservation {
  const manifests = CONTROL_PLANE_COMPONENTS.map((component) => {
    const file = join(node.dir, "root/etc/kubernetes/manifests", `${component}.yaml`);
    try {
      const manifest = parse(readFileSync(file, "utf8")) as {
        spec?: { containers?: { image?: string; command?: string[]; args?: string[] }[] };
      };
      const container = manifest?.spec?.containers?.[0];
      if (!container) return { component, file, error: "has no container" };
      return {
        component,
        file,
        image: container.image,
        argv: [...(container.command ?? []).slice(1), ...(container.args ?? [])],
      };
    } catch (error) {
      return { component, file, error: (error as Error).message };
    }
  });
  return { machine: node.machine, host: node.host, manifests, processes: componentProcesses(node.netns) };
}

/** Processes in network namespace `netns` whose argv[0] is a component's binary (`…/bin/kube-apiserver-1.37`). */
function componentProcesses(netns: string): ProcessObservation[] {
  const found: ProcessObservation[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) !== netns) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0$/, "").split("\0");
      const component = componentOf(argv[0]);
      if (!component) continue;
      found.push({ component, pid: Number(entry), exe: realpathSync(`/proc/${entry}/exe`), argv: argv.slice(1) });
    } catch {
      // Exited meanwhile.
    }
  }
  return found;
}

function componentOf(argv0: string): Component | undefined {
  const name = /^([a-z-]+?)(?:-\d+\.\d+)?$/.exec(basename(argv0))?.[1];
  return CONTROL_PLANE_COMPONENTS.find((component) => component === name);
}

/**
 * What a control plane at `version` runs, from kubeadm itself: `bin/kubeadm-<minor> config images list` for that
 * version (so the etcd image is the one that kubeadm pins), and the binary the process kubelet runs for each image.
 */
export function expectedControlPlane(version: string): ExpectedControlPlane {
  const minor = /^v(\d+\.\d+)\./.exec(version)?.[1];
  const kubeadm = builtBinary(`kubeadm-${minor}`);
  const images = parseImageList(
    // stderr is kept from the run's output: kubeadm warns that this host (the run's namespace) has no default route.
    execFileSync(kubeadm, ["config", "images", "list", "--kubernetes-version", version], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const binDir = join(repoRoot, "bin");
  const binaries = Object.fromEntries(
    CONTROL_PLANE_COMPONENTS.map((component) => {
      const link = binaryForImage(images[component], binDir);
      return [component, { link: link.slice(repoRoot.length + 1), path: realpathSync(link) }];
    }),
  ) as ExpectedControlPlane["binaries"];
  return { version, images, binaries };
}

/** The workload API through the load balancer, with the cluster's admin credentials, as a client-node KubeConfig. */
export async function workloadKubeConfig(s: Scenario): Promise<KubeConfig> {
  const config = await s.workload.kubeconfig();
  const b64 = (pem: string) => Buffer.from(pem).toString("base64");
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "workload", server: config.server, caData: b64(config.caPem) }],
    users: [{ name: "admin", certData: b64(config.certPem), keyData: b64(config.keyPem) }],
    contexts: [{ name: "workload", cluster: "workload", user: "admin" }],
    currentContext: "workload",
  });
  return kubeConfig;
}

/** GET `path` of the workload API through the load balancer, with the cluster's admin credentials. */
export async function workloadGet(s: Scenario, path: string): Promise<{ status: number; body: string }> {
  const config = await s.workload.kubeconfig();
  return httpGet(`${config.server}${path}`, { ca: config.caPem, cert: config.certPem, key: config.keyPem });
}

/**
 * Everything that says which version a kubeadm control plane runs, read now: every Machine's manifests and component
 * processes, kubeadm-config, kube-proxy's DaemonSet (given `kubeProxySettleMs` to get there). The processes seen are
 * watched: they must be gone once the stack stopped.
 */
export async function observeVersion(
  s: Scenario,
  expected: ExpectedControlPlane,
  options: { kubeProxySettleMs?: number } = {},
): Promise<Verdict> {
  const observations = (await kubeadmNodes(s)).map(observeNode);
  // The kubelet's static pods are not the stack's own children: the leak check looks for them after it stopped.
  s.watchedPids.push(...observations.flatMap((node) => node.processes.map((process) => process.pid)));
  for (const node of observations)
    s.log(
      `${node.machine} (${node.host}): ${node.manifests.map((manifest) => `${manifest.component}.yaml ${manifest.image ?? manifest.error}`).join(", ")}; ` +
        `${node.processes.map((process) => `${process.component} pid ${process.pid} ${process.exe}`).join(", ")}`,
    );
  const config = await workloadGet(s, "/api/v1/namespaces/kube-system/configmaps/kubeadm-config");
  return combine(
    controlPlaneVerdict(observations, expected),
    kubeadmConfigVerdict(config.status, config.body, expected.version),
    await kubeProxyWithin(s, expected.images["kube-proxy"], options.kubeProxySettleMs ?? 0),
  );
}

/**
 * kube-proxy's verdict, read again every second for up to `settleMs` until it holds: KCP, and Quorum's kubeadm
 * flavour, move its image only once every Machine is up to date, which is also when a rollout counts as converged.
 */
async function kubeProxyWithin(s: Scenario, image: string, settleMs: number): Promise<Verdict> {
  const startedAt = Date.now();
  for (let attempt = 1; ; attempt++) {
    const { status, body } = await workloadGet(s, "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy");
    const verdict = kubeProxyVerdict(status, body, image);
    const waited = `${((Date.now() - startedAt) / 1000).toFixed(1)} s`;
    if (verdict.failed.length === 0 && attempt > 1)
      return { ...verdict, passed: verdict.passed.map((line) => `${line} (seen after ${waited})`) };
    if (verdict.failed.length === 0 || Date.now() - startedAt >= settleMs)
      return attempt > 1 ? { ...verdict, failed: verdict.failed.map((line) => `${line} (for ${waited})`) } : verdict;
    await sleep(1_000);
  }
}
