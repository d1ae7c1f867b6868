// A kubeadm join that stops after its etcd phase and before mark-control-plane leaves a healthy voter on a registered
// Node that kubeadm never labelled node-role.kubernetes.io/control-plane (nor tainted): workloads may be scheduled on
// it. On real kubeadm Nodes, every Machine's NodeKubeadmLabelSet condition must be True; with the label taken off one
// Node (the state such a join leaves), Quorum must say so on that Machine and in status.nextAction, replace nothing,
// and turn the condition True again once the label is back. Scaling down, it must remove such a Machine first.
import type { KubeConfig } from "@kubernetes/client-node";
import type { Machine } from "../../src/api/capi.ts";
import { eventually, kubeRequestOk } from "../../test/env/index.ts";
import { kubeadmNodes, workloadKubeConfig } from "./kubeadm-nodes.ts";
import type { Scenario } from "./scenario.ts";

const LABEL = "node-role.kubernetes.io/control-plane";
const CONDITION = "NodeKubeadmLabelSet";

function labelCondition(machine: Machine | undefined) {
  return machine?.status?.conditions?.find((condition) => condition.type === CONDITION);
}

function patchLabel(kubeConfig: KubeConfig, host: string, value: string | null): Promise<void> {
  return kubeRequestOk(kubeConfig, `/api/v1/nodes/${host}`, {
    method: "PATCH",
    body: { metadata: { labels: { [LABEL]: value } } },
  });
}

/**
 * Before a scale-down: the label comes off the Node of the newest Machine, the one the plain ordering (oldest first)
 * would keep. Quorum must remove that half-joined Machine, as a user would pick it. Returns the check to run once the
 * scale-down converged.
 */
export async function unlabelNewest(s: Scenario): Promise<() => Promise<void>> {
  const machines = (await s.machines()).filter((machine) => !machine.metadata.deletionTimestamp);
  const newest = machines.reduce((best, machine) =>
    Date.parse(machine.metadata.creationTimestamp ?? "") > Date.parse(best.metadata.creationTimestamp ?? "")
      ? machine
      : best,
  );
  const target = (await kubeadmNodes(s)).find((node) => node.machine === newest.metadata.name);
  if (!target) throw new Error(`no kubeadm Node runs Machine ${newest.metadata.name}`);
  await patchLabel(await workloadKubeConfig(s), target.host, null);
  s.log(`took ${LABEL} off Node ${target.host} of ${target.machine}, the newest Machine, before scaling down`);
  return async () => {
    const kept = (await s.machines()).map((machine) => machine.metadata.name).sort();
    s.check(
      !kept.includes(target.machine),
      `scaling down removes ${target.machine}, the newest Machine, whose Node lacks ${LABEL}, rather than an older one (kept ${kept.join(", ")})`,
    );
  };
}

export async function checkNodeLabel(s: Scenario): Promise<void> {
  const nodes = await kubeadmNodes(s);
  const machines = await s.machines();
  const conditions = nodes.map((node) => {
    const condition = labelCondition(machines.find((machine) => machine.metadata.name === node.machine));
    return `${node.machine} (${node.host}): ${condition?.status ?? "none"}`;
  });
  s.check(
    conditions.every((line) => line.endsWith(": True")),
    `every Machine's Node carries kubeadm's ${LABEL} label, and its ${CONDITION} condition says so (${conditions.join(", ")})`,
  );
  const target = nodes[nodes.length - 1];
  const kubeConfig = await workloadKubeConfig(s);
  const label = (value: string | null) => patchLabel(kubeConfig, target.host, value);
  const before = machines.map((machine) => machine.metadata.name).sort();
  let removed = Date.now();
  await label(null);
  try {
    const said = await eventually<{ condition: string; next: string }>(
      `Quorum to say Node ${target.host} lacks ${LABEL}`,
      async () => {
        const condition = labelCondition((await s.machines()).find((m) => m.metadata.name === target.machine));
        const next = (await s.controlPlane()).status?.nextAction?.message ?? "";
        return condition?.status === "False" && next.includes(`Node ${target.host} of machine ${target.machine}`)
          ? { condition: condition.message ?? "", next }
          : { waiting: `${CONDITION} ${condition?.status}; nextAction: ${next}` };
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    s.log(
      `${CONDITION} False ${Math.round((Date.now() - removed) / 100) / 10} s after the label was removed: ${said.condition}`,
    );
    s.check(
      said.condition.includes("mark-control-plane") && said.condition.includes(`delete machine ${target.machine}`),
      `with ${LABEL} off Node ${target.host}, ${target.machine}'s ${CONDITION} is False naming kubeadm's mark-control-plane phase and the fix, and status.nextAction says it`,
    );
    const during = (await s.machines()).map((machine) => machine.metadata.name).sort();
    s.check(
      during.join(",") === before.join(","),
      `Quorum replaces nothing on its own for a Node without the label (${during.join(", ")})`,
    );
  } finally {
    removed = Date.now();
    await label("");
  }
  await eventually(
    `${target.machine}'s ${CONDITION} to be True again`,
    async () => {
      const condition = labelCondition((await s.machines()).find((m) => m.metadata.name === target.machine));
      return condition?.status === "True" ? true : { waiting: `${CONDITION} ${condition?.status}` };
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  s.check(
    true,
    `with the label back, ${target.machine}'s ${CONDITION} is True again (${Math.round((Date.now() - removed) / 100) / 10} s)`,
  );
}
