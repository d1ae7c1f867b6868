// Whether a control-plane Machine is seen serving: what gates a voter's removal (the Machines that stay must serve)
// and what ranks a broken outdated Machine first among those that could leave. Pure.
import { nodeOfMachine } from "./identity.ts";
import type { MachineView, Snapshot } from "./snapshot.ts";

export interface NotServing {
  machine: MachineView;
  node?: string;
  /** Since when its Node has been NotReady (NodeView.notReadySince), when known. */
  notReadySince?: number;
  /** One line per component that is down ("kube-apiserver: ..."), when the flavour sees them. */
  components?: string[];
  /**
   * Its API server itself is seen down: the dial at its address failed, or its kube-apiserver static pod is missing
   * or not ready. Such a Machine serves no API, so its leaving takes none away (servingGate).
   */
  apiServerDown?: boolean;
}

/** The component whose pod is the Machine's API server (kubeadm's static pod name prefix). */
const API_SERVER = "kube-apiserver";

/**
 * What keeps the Machines that stay from being seen serving: the workload API cannot be read, these Machines have no
 * Ready Node (by nodeRef or providerID), or, where the bootstrap flavour sees them, one of their control-plane
 * components is missing or not ready: kubeadm's static pods, read from their mirror Pods, and the Machine's own API
 * server, dialled at its address (MachineView.apiServer) for a Machine without a Ready Node. A new Machine whose API
 * server crashes must stop a rollout before an old Machine leaves; kubeadm's kubelet on a control-plane node talks to
 * its local API server only, so such a Machine has no Node at all and only the dial names what is wrong. Nothing when
 * there is no workload API to ask (snapshot.workload.expected).
 */
export function notServing(
  snapshot: Snapshot,
  staying: MachineView[],
): { unreadable?: string; machines: NotServing[] } {
  const workload = snapshot.workload;
  if (!workload?.expected) return { machines: [] };
  if (!workload.readable) return { unreadable: workload.error ?? "no answer", machines: [] };
  const flavour = snapshot.workloadSteps;
  if (flavour?.error) return { unreadable: flavour.error, machines: [] };
  const machines: NotServing[] = [];
  for (const machine of staying) {
    const dialled = machine.apiServer?.ready === false ? [`${API_SERVER}: ${machine.apiServer.detail}`] : [];
    const node = nodeOfMachine(machine, snapshot.nodes);
    if (node?.ready !== true) {
      machines.push({
        machine,
        ...(node ? { node: node.name } : {}),
        ...(node?.notReadySince !== undefined ? { notReadySince: node.notReadySince } : {}),
        ...(dialled.length > 0 ? { components: dialled, apiServerDown: true } : {}),
      });
      continue;
    }
    // With a Ready Node the mirror Pods speak for the components, the API server included: the dial is not needed,
    // and a management cluster that cannot reach Machine addresses (firewalled clouds) must not hold every removal.
    const { components, componentNames } = flavour ?? {};
    const problems: string[] = [];
    let apiServerDown = false;
    for (const name of components && componentNames ? componentNames : []) {
      const seen = components?.find((candidate) => candidate.node === node.name && candidate.component === name);
      if (!seen) problems.push(`${name} has no pod on Node ${node.name}`);
      else if (!seen.ready) problems.push(`${name}: ${seen.detail}`);
      else continue;
      if (name === API_SERVER) apiServerDown = true;
    }
    if (problems.length > 0)
      machines.push({ machine, node: node.name, components: problems, ...(apiServerDown ? { apiServerDown } : {}) });
  }
  return { machines };
}

/**
 * The Node of a Machine seen not serving only because that Node is NotReady (a kubelet that stopped: no component is
 * known down, its API server may still answer); undefined otherwise.
 */
export function notReadyNodeOnly(found: NotServing | undefined): string | undefined {
  return found?.node !== undefined && found.components === undefined ? found.node : undefined;
}

/**
 * A Machine seen not serving only because its Node is NotReady, and NotReady for `lostAfterMs` (the spec's
 * remediation.machineLostAfter) at `now` or for an unknown time (a Node without a time on its Ready condition: the way
 * out is not withheld on a guess). A Node is NotReady from its kubelet's registration until its network plugin runs
 * on it (seconds to a minute or two in every rollout), and through a reboot; offering "if it is lost, delete it" then
 * would invite deleting a Machine that is only starting.
 */
export function notReadyLong(found: NotServing, now: number, lostAfterMs: number): boolean {
  if (notReadyNodeOnly(found) === undefined) return false;
  return found.notReadySince === undefined || now - found.notReadySince >= lostAfterMs;
}

/**
 * A Machine whose control-plane components the flavour sees down (a crash-looping static pod, an API server that does
 * not answer), or whose Node is NotReady (a kubelet that stopped): the first to leave among outdated Machines, since
 * a removal with it staying would wait on it forever; one whose API server is down before the others, since its own
 * removal waits on nobody (servingGate). A Machine merely without a Node is not counted: a booting Machine has none
 * yet.
 */
export function componentsDown(
  snapshot: Snapshot,
  machine: MachineView,
): { components: string[]; apiServerDown: boolean; nodeNotReady?: string } {
  const found = notServing(snapshot, [machine]).machines[0];
  const nodeNotReady = notReadyNodeOnly(found);
  return {
    components: found?.components ?? [],
    apiServerDown: found?.apiServerDown === true,
    ...(nodeNotReady !== undefined ? { nodeNotReady } : {}),
  };
}
