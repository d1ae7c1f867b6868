// Reads every source of truth for one QuorumControlPlane — its Cluster, its Machines, the workload Nodes and the
// etcd member list with per-member status — and returns them as an Observation. Never decides anything.
import { CONTROL_PLANE_NODE_LABEL, type Cluster, type Machine, type Node } from "../api/capi.ts";
import { flavourOf } from "../api/flavour.ts";
import { DEFAULTS } from "../api/constants.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import { etcdEndpoints } from "../api/endpoints.ts";
import type {
  ApiServerReadiness,
  CertificatesExpiries,
  EtcdClusterClient,
  NodeQuery,
  TemplateReader,
  WorkloadAccess,
} from "../ports/index.ts";
import { observe as observeMembers, recall } from "../core/memory.ts";
import type { EtcdView, WorkloadStepsView, WorkloadView } from "../core/snapshot.ts";
import { machinesToRead } from "./certificates-expiry.ts";
import { needsUser, observeEtcd, toEtcdView } from "./etcd-view.ts";
import type { Observation } from "./snapshot-builder.ts";

export interface ObservedWorld {
  observation: Observation;
  /** The etcd client of this reconcile (undefined when there was nothing to reach); the caller closes (releases) it. */
  etcd?: EtcdClusterClient;
  /** Why the workload Nodes could not be listed, when they could not (shown in status, never fatal). */
  nodesError?: string;
  /** The adapter's reason for nodesError, when it gave one (e.g. WorkloadKubeconfigRejected). */
  nodesErrorReason?: string;
  /** Machines whose certificates expiry could not be read (logged; their expiry stays unknown). */
  certificatesErrors?: string[];
}

export async function observe(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: Machine[],
  workload: WorkloadAccess,
  now: number,
  template: TemplateReader,
): Promise<ObservedWorld> {
  const clientPort = controlPlane.spec.etcd?.clientPort ?? DEFAULTS.etcdClientPort;
  const live = machines.filter((machine) => (machine.status?.addresses ?? []).length > 0);
  const endpoints = etcdEndpoints(
    live.map((machine) => ({ addresses: internalAddresses(machine) })),
    clientPort,
  );
  const [etcdResult, nodesResult, workloadSteps, certificates, apiServers] = await Promise.all([
    observeEtcdOf(controlPlane, cluster, machines, endpoints, workload),
    listNodes(controlPlane, cluster, machines, workload),
    stepsOf(controlPlane, cluster, machines, workload, template),
    certificatesOf(controlPlane, cluster, machines, workload, template),
    apiServersOf(controlPlane, cluster, machines, workload, template),
  ]);
  const observation: Observation = {
    now,
    controlPlane,
    cluster,
    machines,
    nodes: nodesResult.nodes,
    workload: nodesResult.workload,
    ...(workloadSteps ? { workloadSteps } : {}),
    ...(Object.keys(certificates.expiries).length > 0 ? { certificatesExpiries: certificates.expiries } : {}),
    ...(Object.keys(apiServers).length > 0 ? { apiServers } : {}),
    etcd: etcdResult.view(now),
  };
  return {
    observation,
    ...(etcdResult.client ? { etcd: etcdResult.client } : {}),
    ...(nodesResult.error ? { nodesError: nodesResult.error } : {}),
    ...(nodesResult.reason ? { nodesErrorReason: nodesResult.reason } : {}),
    ...(certificates.errors.length > 0 ? { certificatesErrors: certificates.errors } : {}),
  };
}

/** The API server certificates' expiry of the Machines that do not carry it yet (src/controller/certificates-expiry.ts). */
async function certificatesOf(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: Machine[],
  workload: WorkloadAccess,
  template: TemplateReader,
): Promise<CertificatesExpiries> {
  const toRead = machinesToRead(controlPlane, machines, internalAddresses);
  if (toRead.length === 0 || !workload.certificatesExpiry) return { expiries: {}, errors: [] };
  return workload.certificatesExpiry(controlPlane, cluster, toRead, template);
}

/**
 * The own API server of each live Machine that has no Node yet, dialled (kubeadm): what names a Machine whose API
 * server cannot start (its kubelet registers through it). A Machine with a Node is seen through its mirror Pods.
 */
async function apiServersOf(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: Machine[],
  workload: WorkloadAccess,
  template: TemplateReader,
): Promise<Record<string, ApiServerReadiness>> {
  if (!workload.apiServers || controlPlane.metadata.deletionTimestamp) return {};
  const toDial = machines.flatMap((machine) => {
    const address = internalAddresses(machine)[0];
    if (machine.metadata.deletionTimestamp || machine.status?.nodeRef?.name || address === undefined) return [];
    return [{ name: machine.metadata.name, uid: machine.metadata.uid ?? "", address }];
  });
  if (toDial.length === 0) return {};
  return workload.apiServers(controlPlane, cluster, toDial, template);
}

async function observeEtcdOf(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: Machine[],
  endpoints: string[],
  workload: WorkloadAccess,
): Promise<{ client?: EtcdClusterClient; view: (now: number) => EtcdView }> {
  if (machines.length === 0) {
    // Nothing runs yet, so there is no etcd to ask: an empty, observed membership lets the planner create the first Machine.
    return { view: () => ({ observed: true, members: [], alarms: [] }) };
  }
  if (endpoints.length === 0) {
    return {
      view: () => ({
        observed: false,
        error: "no control-plane Machine reports an address yet, so etcd cannot be reached",
        members: [],
        alarms: [],
      }),
    };
  }
  let client: EtcdClusterClient;
  try {
    client = await workload.etcd(controlPlane, cluster, endpoints, machineNodes(machines));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const byUser = needsUser(error);
    return {
      view: () => ({
        observed: false,
        error: message,
        ...(byUser ? { needsUser: byUser } : {}),
        members: [],
        alarms: [],
      }),
    };
  }
  const raw = toEtcdView(await observeEtcd(client));
  return {
    client,
    view: (now) => ({
      ...raw,
      members: observeMembers(raw.members, recall(controlPlane.status?.etcd?.members, now), now),
    }),
  };
}

/**
 * The bootstrap flavour's workload steps, from the first Machine on: before the control plane is initialised they
 * also say whether it is by the flavour's word (kubeadm: init uploaded kubeadm-config), and the first Machine's
 * bootstrap creates what joiners read. A generic flavour answers without I/O.
 */
async function stepsOf(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: Machine[],
  workload: WorkloadAccess,
  template: TemplateReader,
): Promise<WorkloadStepsView | undefined> {
  if (machines.length === 0 || controlPlane.metadata.deletionTimestamp) return undefined;
  const observed = await workload.workloadSteps(controlPlane, cluster, template);
  if (!observed.flavour) return undefined;
  return {
    flavour: observed.flavour,
    steps: observed.steps,
    ...(observed.components ? { components: observed.components } : {}),
    ...(observed.componentNames ? { componentNames: observed.componentNames } : {}),
    ...(observed.initialized !== undefined ? { initialized: observed.initialized } : {}),
    ...(observed.error ? { error: observed.error } : {}),
  };
}

function controlPlaneInitialized(controlPlane: QuorumControlPlane, cluster: Cluster): boolean {
  return (
    cluster.status?.initialization?.controlPlaneInitialized === true ||
    controlPlane.status?.initialization?.controlPlaneInitialized === true
  );
}

/**
 * The Nodes a reconcile reads. A kubeadm control plane's are those kubeadm labelled control-plane (the label selector
 * KCP lists with: a workload cluster's workers, hundreds of Nodes, are never read), plus each Node a Machine's nodeRef
 * names that the list left out: a join that stopped before labelling its Node (src/core/node-label.ts). Another
 * flavour may not label its Nodes: every Node.
 */
export function nodeQuery(controlPlane: QuorumControlPlane, machines: readonly Machine[]): NodeQuery {
  if (flavourOf(controlPlane) !== "kubeadm") return { names: [] };
  const names = machines.flatMap((machine) => (machine.status?.nodeRef?.name ? [machine.status.nodeRef.name] : []));
  return { labelSelector: CONTROL_PLANE_NODE_LABEL, names };
}

async function listNodes(
  controlPlane: QuorumControlPlane,
  cluster: Cluster,
  machines: readonly Machine[],
  workload: WorkloadAccess,
): Promise<{ nodes: Node[]; workload: WorkloadView; error?: string; reason?: string }> {
  const initialized = controlPlaneInitialized(controlPlane, cluster);
  // Without an endpoint there may be no workload API at all (Machines that run etcd only): Nodes are then checked only
  // if one answers anyway (a user's kubeconfig Secret), and an unreadable one holds nothing back.
  const endpoint = Boolean(cluster.spec?.controlPlaneEndpoint?.host);
  if (!initialized) return { nodes: [], workload: { expected: false, readable: false } };
  try {
    return {
      nodes: await workload.nodes(controlPlane, cluster, nodeQuery(controlPlane, machines)),
      workload: { expected: true, readable: true },
    };
  } catch (error) {
    // The adapters' typed errors carry a reason (src/adapters/errors.ts); the controller reads it, never imports them.
    const reason = (error as { reason?: unknown } | undefined)?.reason;
    const message = error instanceof Error ? error.message : String(error);
    return {
      nodes: [],
      workload: { expected: endpoint, readable: false, error: message },
      error: message,
      ...(typeof reason === "string" ? { reason } : {}),
    };
  }
}

/**
 * Each address of a Machine with a nodeRef (lower case) to the name of that Node. A deleting Machine's member is still
 * asked; where its address was given to a new Machine, the new one's Node wins.
 */
export function machineNodes(machines: readonly Machine[]): Map<string, string> {
  const found = new Map<string, string>();
  const deletingFirst = [...machines].sort(
    (a, b) => Number(!a.metadata.deletionTimestamp) - Number(!b.metadata.deletionTimestamp),
  );
  for (const machine of deletingFirst) {
    const node = machine.status?.nodeRef?.name;
    if (!node) continue;
    for (const address of internalAddresses(machine)) found.set(address.toLowerCase(), node);
  }
  return found;
}

/** Internal IPs first: etcd listens on the Machine's private address; other address kinds are a fallback. */
function internalAddresses(machine: Machine): string[] {
  const addresses = machine.status?.addresses ?? [];
  const internal = addresses.filter((address) => address.type === "InternalIP").map((address) => address.address ?? "");
  const rest = addresses.filter((address) => address.type !== "InternalIP").map((address) => address.address ?? "");
  return [...internal, ...rest].filter((address) => address !== "");
}
