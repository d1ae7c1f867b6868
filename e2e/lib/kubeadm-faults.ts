// Faults the kubeadm-upgrade scenario puts into a kubeadm control plane, as users meet them: a KubeadmConfigTemplate
// whose clusterConfiguration gives kube-apiserver a flag it does not know (the new Machine's API server never starts),
// and a Machine whose kube-apiserver is killed and cannot come back (its serving certificate is gone), for a
// MachineHealthCheck to find and Quorum to remediate. And what the scenario waits for around them.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CAPI_API_VERSION, LABEL_CLUSTER_NAME, LABEL_CONTROL_PLANE } from "../../src/api/constants.ts";
import { kubeRequestOk } from "../../test/env/index.ts";
import { observeNode, type KubeadmNode } from "./kubeadm-nodes.ts";
import { ScenarioFailure, type Scenario } from "./scenario.ts";
import { KUBEADM_BOOTSTRAP_API_VERSION } from "./stack.ts";

/** kube-apiserver exits at once on an unknown flag ("unknown flag: --quorum-e2e-no-such-flag"). */
export const BROKEN_API_SERVER_ARG = { name: "quorum-e2e-no-such-flag", value: "true" };

interface KubeadmConfigTemplate {
  metadata: { name: string };
  spec: {
    template: {
      spec: { clusterConfiguration?: { apiServer?: { extraArgs?: { name: string; value: string }[] } } };
    };
  };
}

function templatesPath(s: Scenario): string {
  return `/apis/${KUBEADM_BOOTSTRAP_API_VERSION}/namespaces/${s.namespace}/kubeadmconfigtemplates`;
}

/** A copy of the control plane's KubeadmConfigTemplate with BROKEN_API_SERVER_ARG added; returns its name. */
export async function createBrokenApiServerTemplate(s: Scenario, from: string): Promise<string> {
  const original = await kubeRequestOk<KubeadmConfigTemplate>(s.stack.kubeConfig, `${templatesPath(s)}/${from}`);
  const spec = structuredClone(original.spec);
  const clusterConfiguration = (spec.template.spec.clusterConfiguration ??= {});
  const apiServer = (clusterConfiguration.apiServer ??= {});
  apiServer.extraArgs = [...(apiServer.extraArgs ?? []), BROKEN_API_SERVER_ARG];
  const name = `${from}-bad-apiserver`;
  await kubeRequestOk(s.stack.kubeConfig, templatesPath(s), {
    body: {
      apiVersion: KUBEADM_BOOTSTRAP_API_VERSION,
      kind: "KubeadmConfigTemplate",
      metadata: { name, namespace: s.namespace },
      spec,
    },
  });
  return name;
}

export function useBootstrapTemplate(s: Scenario, name: string, extra: Record<string, unknown> = {}): Promise<void> {
  return s.patch({ ...extra, machineTemplate: { spec: { bootstrapConfigTemplateRef: { name } } } });
}

function rollingOutMessage(qcp: Awaited<ReturnType<Scenario["controlPlane"]>>): string {
  return qcp.status?.conditions?.find((condition) => condition.type === "RollingOut")?.message ?? "";
}

/**
 * Waits until a Machine not in `before` exists and the QuorumControlPlane's RollingOut condition says the rollout
 * waits on that Machine's kube-apiserver; returns the Machine and the message.
 */
export async function waitRolloutStopped(
  s: Scenario,
  before: ReadonlySet<string>,
  timeoutMs: number,
): Promise<{ machine: string; message: string }> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    const fresh = (await s.machines()).map((machine) => machine.metadata.name).filter((name) => !before.has(name));
    const message = rollingOutMessage(await s.controlPlane());
    const machine = fresh.find((name) =>
      message.includes(`machine ${name}'s control plane is not serving (kube-apiserver:`),
    );
    if (machine) return { machine, message };
    if (message !== last) s.log(`waiting for the rollout to stop on the new Machine's kube-apiserver: ${message}`);
    last = message;
    await sleep(2_000);
  }
  throw new ScenarioFailure(
    `the rollout never stopped on a new Machine whose kube-apiserver cannot start within ${timeoutMs / 1000} s; RollingOut: ${last}`,
  );
}

/**
 * For `holdMs`, every Machine of `before` stays (not deleting) with its etcd member, the stopped Machine is the only
 * new one, and the condition keeps naming it. Returns how many observations were made.
 */
export async function holdStopped(
  s: Scenario,
  before: ReadonlySet<string>,
  stopped: string,
  holdMs: number,
): Promise<number> {
  const until = Date.now() + holdMs;
  let observations = 0;
  while (Date.now() < until) {
    const machines = await s.machines();
    const qcp = await s.controlPlane();
    const members = qcp.status?.etcd?.members ?? [];
    for (const name of before) {
      const machine = machines.find((candidate) => candidate.metadata.name === name);
      s.check(machine && !machine.metadata.deletionTimestamp, `old Machine ${name} stays while the rollout is stopped`);
      s.check(
        members.some((member) => member.machine === name && !member.learner),
        `old Machine ${name}'s etcd member stays a voter while the rollout is stopped (members: ${members.map((member) => `${member.name}→${member.machine ?? "?"}`).join(", ")})`,
      );
    }
    const fresh = machines.filter((machine) => !before.has(machine.metadata.name)).map((m) => m.metadata.name);
    s.check(
      fresh.length === 1 && fresh[0] === stopped,
      `only ${stopped} was created while its kube-apiserver cannot start (new: ${fresh.join(", ")})`,
    );
    const message = rollingOutMessage(qcp);
    s.check(
      message.includes(`machine ${stopped}'s control plane is not serving (kube-apiserver:`),
      `the RollingOut condition keeps naming ${stopped} and its kube-apiserver: ${message}`,
    );
    observations++;
    await sleep(3_000);
  }
  return observations;
}

/**
 * A MachineHealthCheck over the cluster's control-plane Machines, as CAPI's docs suggest for them: a Node whose Ready
 * condition is Unknown or False for `timeoutSeconds` is unhealthy (its owner, Quorum, remediates it).
 */
export async function createControlPlaneHealthCheck(s: Scenario, timeoutSeconds: number): Promise<string> {
  const name = `${s.cluster}-control-plane`;
  await kubeRequestOk(s.stack.kubeConfig, `/apis/${CAPI_API_VERSION}/namespaces/${s.namespace}/machinehealthchecks`, {
    body: {
      apiVersion: CAPI_API_VERSION,
      kind: "MachineHealthCheck",
      metadata: { name, namespace: s.namespace },
      spec: {
        clusterName: s.cluster,
        selector: { matchLabels: { [LABEL_CLUSTER_NAME]: s.cluster, [LABEL_CONTROL_PLANE]: "" } },
        checks: {
          unhealthyNodeConditions: [
            { type: "Ready", status: "Unknown", timeoutSeconds },
            { type: "Ready", status: "False", timeoutSeconds },
          ],
        },
      },
    },
  });
  return name;
}

/**
 * Kills the Machine's kube-apiserver for good: its serving certificate is removed first, so every restart the kubelet
 * makes exits at once. The kubelet (kubeadm points it at its local API server) then stops reporting, and the Node goes
 * Unknown once the node lifecycle controller's grace period passes. Returns the killed pids.
 */
export function killApiServer(node: KubeadmNode): number[] {
  rmSync(join(node.dir, "root/etc/kubernetes/pki/apiserver.crt"));
  const pids = observeNode(node)
    .processes.filter((seen) => seen.component === "kube-apiserver")
    .map((seen) => seen.pid);
  for (const pid of pids) process.kill(pid, "SIGKILL");
  return pids;
}

/** Waits until Machine `name` is gone (its remediation deleted it). */
export async function waitMachineGone(s: Scenario, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await s.machines()).some((machine) => machine.metadata.name === name)) return;
    await sleep(2_000);
  }
  const machine = (await s.machines()).find((candidate) => candidate.metadata.name === name);
  throw new ScenarioFailure(
    `Machine ${name}, whose kube-apiserver was killed, was not remediated within ${timeoutMs / 1000} s; its conditions: ${JSON.stringify(machine?.status?.conditions ?? [])}`,
  );
}
