// The conditions a control-plane provider owns on its Machines under the CAPI v1beta2 contract: `UpToDate` on every
// Machine (CAPI's Machine controller leaves it to the owner; the QuorumControlPlane's upToDateReplicas, the Cluster's
// RollingOut condition and the topology controller read it), and `OwnerRemediated` on a Machine a MachineHealthCheck
// asked the owner to remediate, and on kubeadm Machines `NodeKubeadmLabelSet` (src/core/node-label.ts). Pure; the shell
// writes what differs (src/controller/machine-conditions.ts).
import {
  CONTROL_PLANE_NODE_LABEL,
  NODE_KUBEADM_LABEL_CONDITION,
  OWNER_REMEDIATED_CONDITION,
  UP_TO_DATE_CONDITION,
} from "../api/capi.ts";
import type { Action } from "./actions.ts";
import { formatTime } from "./format.ts";
import { nodeOfMachine } from "./identity.ts";
import { judgesMachine, unlabelledMessage } from "./node-label.ts";
import { failedInARow, retriesExhausted } from "./remediation-limits.ts";
import { outdatedReasons } from "./selection.ts";
import type { MachineView, Snapshot } from "./snapshot.ts";

export interface MachineCondition {
  type: typeof UP_TO_DATE_CONDITION | typeof OWNER_REMEDIATED_CONDITION | typeof NODE_KUBEADM_LABEL_CONDITION;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
}

export interface OwnedConditions {
  set: MachineCondition[];
  /** Condition types to take off the Machine: a stale OwnerRemediated once the Machine recovered (as KCP does). */
  remove: (typeof OWNER_REMEDIATED_CONDITION)[];
}

/**
 * The owned conditions each Machine should carry, by Machine name. A Machine Quorum cannot read (malformed) gets
 * none: what it runs is unknown, so calling it up to date or not would be a guess.
 */
export function ownedMachineConditions(snapshot: Snapshot, action: Action): Map<string, OwnedConditions> {
  const conditions = new Map<string, OwnedConditions>();
  for (const machine of snapshot.machines) {
    if (machine.malformed !== undefined) continue;
    conditions.set(machine.name, {
      set: [
        upToDate(snapshot, machine),
        ...(machine.remediationRequested ? [ownerRemediated(snapshot, machine, action)] : []),
        ...nodeLabelled(snapshot, machine),
      ],
      remove: machine.remediationWithdrawn && machine.deleting === undefined ? [OWNER_REMEDIATED_CONDITION] : [],
    });
  }
  return conditions;
}

/** Whether the Machine matches the spec, and if not why, one "* ..." line per reason as KCP writes them. */
function upToDate(snapshot: Snapshot, machine: MachineView): MachineCondition {
  const reasons = outdatedReasons(snapshot, machine);
  if (reasons.length === 0) return { type: UP_TO_DATE_CONDITION, status: "True", reason: "UpToDate", message: "" };
  return {
    type: UP_TO_DATE_CONDITION,
    status: "False",
    reason: "NotUpToDate",
    message: reasons.map((reason) => `* ${reason.charAt(0).toUpperCase()}${reason.slice(1)}`).join("\n"),
  };
}

/**
 * The owner's answer to a MachineHealthCheck: the Machine is being replaced, the replacement waits, or (KCP's
 * CannotBeRemediated) maxRetry replacements in a row failed and nothing replaces it before minHealthyPeriod has passed.
 * The message stays the same while it waits (the reason changes with every poll); status.nextAction says what it
 * waits for.
 */
function ownerRemediated(snapshot: Snapshot, machine: MachineView, action: Action): MachineCondition {
  const deleting = machine.deleting !== undefined || (action.kind === "Remediate" && action.machine === machine.name);
  if (deleting)
    return {
      type: OWNER_REMEDIATED_CONDITION,
      status: "False",
      reason: "MachineDeleting",
      message: "Machine is deleting",
    };
  const exhausted = retriesExhausted(snapshot, machine);
  if (exhausted) {
    const { minHealthyPeriodMs } = snapshot.controlPlane.remediation;
    return {
      type: OWNER_REMEDIATED_CONDITION,
      status: "False",
      reason: "CannotBeRemediated",
      message: `${failedInARow(snapshot, exhausted)}; this Machine replaces ${exhausted.machine}, and Quorum does not replace it before ${formatTime(exhausted.time + minHealthyPeriodMs)}; find why replacements fail, then delete it by hand`,
    };
  }
  return {
    type: OWNER_REMEDIATED_CONDITION,
    status: "False",
    reason: "RemediationDeferred",
    message:
      "Quorum replaces this Machine once that keeps etcd quorum and the remediation limits allow it; the QuorumControlPlane's status.nextAction says what it waits for",
  };
}

/**
 * On a kubeadm Machine, whether its Node carries the control-plane label kubeadm join sets last (src/core/node-label.ts).
 * Nothing before the Machine has a Node, while it is deleting, or while the Nodes cannot be read (the last word stays).
 */
function nodeLabelled(snapshot: Snapshot, machine: MachineView): MachineCondition[] {
  if (!judgesMachine(snapshot, machine)) return [];
  const node = nodeOfMachine(machine, snapshot.nodes);
  if (node)
    return [
      node.controlPlaneLabel
        ? { type: NODE_KUBEADM_LABEL_CONDITION, status: "True", reason: "NodeKubeadmLabelSet", message: "" }
        : {
            type: NODE_KUBEADM_LABEL_CONDITION,
            status: "False",
            reason: "NodeKubeadmLabelNotSet",
            message: unlabelledMessage({ machine: machine.name, node: node.name }),
          },
    ];
  if (machine.nodeName === undefined) return [];
  return [
    {
      type: NODE_KUBEADM_LABEL_CONDITION,
      status: "Unknown",
      reason: "NodeNotFound",
      message: `Node ${machine.nodeName} (Machine status.nodeRef) does not exist: whether it carries ${CONTROL_PLANE_NODE_LABEL} is unknown`,
    },
  ];
}
