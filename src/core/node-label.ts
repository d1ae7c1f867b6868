// kubeadm's last step of a control-plane join (phase mark-control-plane) labels the Node
// node-role.kubernetes.io/control-plane and taints it NoSchedule. A join that stops before that step (upload-config or
// update-status failing, an API server that did not answer in time) leaves a Machine whose etcd member is a healthy
// voter and whose Node is registered, yet the Node is not marked a control-plane node: workloads may be scheduled on
// it, and CAPI says nothing. Quorum names such a Machine in its NodeKubeadmLabelSet condition and its nextAction, and
// keeps looking at the short poll interval until the label is there. Pure.
import { CONTROL_PLANE_NODE_LABEL } from "../api/capi.ts";
import { nodeOfMachine } from "./identity.ts";
import type { MachineView, Snapshot } from "./snapshot.ts";

export interface UnlabelledNode {
  machine: string;
  node: string;
}

/** The label is judged on a kubeadm control plane's Machines, once their Nodes were listed. */
export function judgesNodeLabel(snapshot: Snapshot): boolean {
  return snapshot.workloadSteps?.flavour === "kubeadm" && snapshot.workload?.readable === true;
}

/** Whether a Machine's Node is judged: a well-formed Machine, not deleting, of a judged control plane. */
export function judgesMachine(snapshot: Snapshot, machine: MachineView): boolean {
  return judgesNodeLabel(snapshot) && machine.deleting === undefined && machine.malformed === undefined;
}

/** The Machines whose kubeadm join has not labelled their Node (yet, or ever). */
export function unlabelledNodes(snapshot: Snapshot): UnlabelledNode[] {
  const unlabelled: UnlabelledNode[] = [];
  for (const machine of snapshot.machines) {
    const node = judgesMachine(snapshot, machine) ? nodeOfMachine(machine, snapshot.nodes) : undefined;
    if (node && !node.controlPlaneLabel) unlabelled.push({ machine: machine.name, node: node.name });
  }
  return unlabelled;
}

/** What a Machine whose Node lacks the label is told: what it means and the way out. */
export function unlabelledMessage({ machine, node }: UnlabelledNode): string {
  return (
    `Node ${node} of machine ${machine} does not have the ${CONTROL_PLANE_NODE_LABEL} label that kubeadm join's ` +
    "mark-control-plane phase sets: its join has not finished, or stopped before that phase (the Node may then lack " +
    `the control-plane taint too and take workloads); if it stays so, delete machine ${machine} to replace it`
  );
}
