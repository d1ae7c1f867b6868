// `clusterctl move` of a healthy 3-replica cluster from the stack's management cluster (the source) to a second one
// (the target), both with CAPI core's, Quorum's and the process provider's CRDs, clusterctl's inventory (what
// `clusterctl init` writes, e2e/lib/clusterctl.ts) and the real CAPI core manager; a Quorum process runs against
// each, and keeps running through the move, as a user's controllers would. The real clusterctl pauses the Cluster,
// copies every object (status is never copied), deletes the source objects after removing their finalizers, and
// unpauses the target. The process provider serves both management clusters and shares one set of running Machines
// between them (e2e/provider/cloud.ts): it does nothing for a paused Cluster, so deleting the source objects stops no
// Machine, and the target's objects, which carry the providerID, are adopted once unpaused. Then the source's Quorum
// and CAPI manager are stopped and the target's Quorum scales the cluster to 5 and back to 3.
// What stands in: the inventory objects and CRD labels are written rather than installed by `clusterctl init`, which
// would also install webhook configurations for Deployments that never run here (no kubelet); move itself reads
// nothing else of init's and needs no cert-manager.
import { setTimeout as sleep } from "node:timers/promises";
import { CAPI_API_VERSION, secretName } from "../../src/api/constants.ts";
import { kubeRequest, kubeRequestOk } from "../../test/env/index.ts";
import { startManagementCluster, runClusterctl, writeClusterctlInventory } from "../lib/clusterctl.ts";
import { ScenarioFailure, type Scenario } from "../lib/scenario.ts";
import { BOOTSTRAP_API_VERSION, INFRA_API_VERSION, RESOURCE } from "../provider/crds.ts";
import type { ScenarioDefinition } from "./types.ts";
import { VERSION } from "./types.ts";

/** What identifies each Machine across a move: its name and the providerID of its "VM" (UIDs change). */
/** Waits until every Machine has status.nodeRef, what clusterctl move checks first. */
async function waitNodeRefs(s: Scenario, timeoutMs: number): Promise<void> {
  const started = Date.now();
  for (;;) {
    const missing = (await s.machines())
      .filter((machine) => !machine.status?.nodeRef?.name)
      .map((machine) => machine.metadata.name);
    if (missing.length === 0) {
      s.log(`every Machine has its nodeRef (${((Date.now() - started) / 1000).toFixed(1)} s after convergence)`);
      return;
    }
    if (Date.now() - started > timeoutMs)
      throw new ScenarioFailure(
        `CAPI set no nodeRef on ${missing.join(", ")} within ${timeoutMs / 1000} s: clusterctl move would refuse`,
      );
    await sleep(1_000);
  }
}

async function machineIdentities(s: Scenario): Promise<Map<string, string>> {
  return new Map(
    (await s.machines()).map((machine) => [machine.metadata.name, machine.spec.providerID ?? "(no providerID)"]),
  );
}

async function memberIds(s: Scenario): Promise<string[]> {
  return ((await s.controlPlane()).status?.etcd?.members ?? []).map((member) => `${member.name}=${member.id}`).sort();
}

/** The certificate of each of the cluster's CA Secrets, to show the target got the source's, not new ones. */
async function caCertificates(s: Scenario): Promise<Record<string, string>> {
  const names = [secretName.ca(s.cluster), secretName.etcd(s.cluster), secretName.sa(s.cluster)];
  const entries = await Promise.all(
    names.map(async (name) => {
      const secret = await kubeRequestOk<{ data?: Record<string, string> }>(
        s.stack.kubeConfig,
        `/api/v1/namespaces/${s.namespace}/secrets/${name}`,
      );
      return [name, secret.data?.["tls.crt"] ?? ""] as const;
    }),
  );
  return Object.fromEntries(entries);
}

const describe = (identities: Map<string, string>) =>
  [...identities]
    .sort()
    .map(([name, providerID]) => `${name} (${providerID})`)
    .join(", ");

export const clusterctlMove: ScenarioDefinition = {
  name: "clusterctl-move",
  title: "clusterctl move of a running 3-replica cluster to a second management cluster; there, 3 → 5 → 3",
  async run(s) {
    s.log("starting the target management cluster: kube-apiserver, CRDs, clusterctl inventory, CAPI core manager");
    const target = await startManagementCluster();
    try {
      await s.setup(
        { replicas: 3, version: VERSION },
        {
          providerAlsoServes: [target.kubeconfigPath],
          startQuorum: async (stack) => {
            stack.addManagement(target);
            await stack.startQuorum({ label: "quorum-source" });
          },
        },
      );
    } catch (error) {
      if (!s.stack) await target.stop();
      throw error;
    }
    const source = { kubeConfig: s.stack.kubeConfig, kubeconfigPath: s.stack.kubeconfigPath };
    await writeClusterctlInventory(source.kubeConfig);
    await s.stack.startQuorum({ label: "quorum-target", kubeconfigPath: target.kubeconfigPath });

    // clusterctl move refuses while a Machine has no nodeRef ("still provisioning the node"). CAPI sets it only once
    // its ClusterCache reaches the workload API server, which backs off for tens of seconds when its first attempt
    // came before that API server answered: Quorum's convergence does not imply it, so wait as a user would.
    await waitNodeRefs(s, 180_000);
    const machinesBefore = await machineIdentities(s);
    const membersBefore = await memberIds(s);
    const certificatesBefore = await caCertificates(s);
    const move = await s.operation(
      "clusterctl move",
      async () => {
        const output = await runClusterctl(
          [
            "move",
            "--kubeconfig",
            source.kubeconfigPath,
            "--to-kubeconfig",
            target.kubeconfigPath,
            "--namespace",
            s.namespace,
            "-v",
            "1",
          ],
          s.stack.dir,
          "clusterctl-move",
        );
        s.log(`clusterctl move: ${output.trim().split("\n").slice(-3).join(" | ")}`);
        s.stack.useManagement(target);
      },
      { replicas: 3 },
    );

    const machinesAfter = await machineIdentities(s);
    s.check(
      describe(machinesAfter) === describe(machinesBefore),
      `the target has the same Machines with the same providerIDs: ${describe(machinesAfter)} (before: ${describe(machinesBefore)})`,
    );
    const membersAfter = await memberIds(s);
    const memberChanges = s
      .memberEvents()
      .filter((event) => event.at >= move.startedAt && event.at <= move.endedAt && event.kind !== "member-started");
    s.check(
      membersAfter.join(",") === membersBefore.join(",") && memberChanges.length === 0,
      `no etcd member was added or removed by the move (members ${membersAfter.join(", ")}; changes seen: ${memberChanges.map((event) => `${event.kind} ${event.subject}`).join(", ") || "none"})`,
    );
    const duringMove = s.stack
      .providerEvents()
      .filter((event) => event.namespace === s.namespace && event.at >= move.startedAt && event.at <= move.endedAt);
    const torn = duringMove.filter((event) =>
      ["stopping", "infrastructure-deleted", "provisioned", "load-balancer-stopped"].includes(event.kind),
    );
    s.check(
      torn.length === 0,
      `the provider stopped, deleted or provisioned nothing during the move (${torn.map((event) => `${event.kind} ${event.machine ?? event.cluster}`).join(", ") || "nothing"})`,
    );
    const adopted = new Set(
      duringMove
        .filter((event) => event.kind === "adopted" && event.to === target.kubeconfigPath)
        .map((event) => event.machine),
    );
    s.check(
      [...machinesBefore.keys()].every((name) => adopted.has(name)),
      `the provider serving the target adopted every running Machine by its providerID (${[...adopted].sort().join(", ")})`,
    );
    const actions = s.controllerActions().filter((action) => action.at >= move.startedAt && action.at <= move.endedAt);
    s.check(
      actions.length === 0,
      `neither Quorum acted during the move (${actions.map((action) => `${action.quorum}: ${action.kind}`).join(", ") || "no action"})`,
    );
    const certificatesAfter = await caCertificates(s);
    s.check(
      JSON.stringify(certificatesAfter) === JSON.stringify(certificatesBefore),
      `the target's ${Object.keys(certificatesAfter).join(", ")} hold the source's certificates (no new CA was minted)`,
    );
    await checkMovedTemplates(s);
    const left = await kubeRequest(
      source.kubeConfig,
      `/apis/${CAPI_API_VERSION}/namespaces/${s.namespace}/clusters/${s.cluster}`,
    );
    s.check(left.status === 404, `the source no longer has Cluster ${s.namespace}/${s.cluster} (HTTP ${left.status})`);

    // As a user would once the move is done: the source's controllers go; everything now runs from the target.
    await s.stack.quorums.find((quorum) => quorum.label === "quorum-source")?.process.stop(5_000);
    // Only the process: its log stays where a failed run's log copy finds it.
    await s.stack.capi.process.stop(10_000);
    s.log("stopped Quorum and the CAPI core manager of the source management cluster");

    await s.operation("scale 3→5 on the target", () => s.patch({ replicas: 5 }), { replicas: 5 });
    await s.operation("scale 5→3 on the target", () => s.patch({ replicas: 3 }), { replicas: 3 });
    return 3;
  },
};

/** The templates moved with the Cluster (Quorum owns them to it, src/controller/template-owners.ts). */
async function checkMovedTemplates(s: Scenario): Promise<void> {
  const cluster = await kubeRequestOk<{ metadata: { uid: string } }>(
    s.stack.kubeConfig,
    `/apis/${CAPI_API_VERSION}/namespaces/${s.namespace}/clusters/${s.cluster}`,
  );
  for (const [apiVersion, resource, kind] of [
    [INFRA_API_VERSION, RESOURCE.ProcessMachineTemplate, "ProcessMachineTemplate"],
    [BOOTSTRAP_API_VERSION, RESOURCE.ProcessBootstrapConfigTemplate, "ProcessBootstrapConfigTemplate"],
  ] as const) {
    const name = `${s.cluster}-control-plane`;
    const template = await kubeRequest<{ metadata: { ownerReferences?: { kind: string; uid: string }[] } }>(
      s.stack.kubeConfig,
      `/apis/${apiVersion}/namespaces/${s.namespace}/${resource}/${name}`,
    );
    const owner =
      template.status === 200
        ? template.body.metadata.ownerReferences?.find((ref) => ref.kind === "Cluster")
        : undefined;
    s.check(
      owner?.uid === cluster.metadata.uid,
      `${kind} ${s.namespace}/${name} was moved and is owned by the target's Cluster (HTTP ${template.status})`,
    );
  }
}
