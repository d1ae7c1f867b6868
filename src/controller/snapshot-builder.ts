// Turns the objects observe() read (QuorumControlPlane, Cluster, Machines, Nodes, the etcd member list) into
// the plain Snapshot the planner decides on. Pure: every input is passed in, including the clock.
import { createHash } from "node:crypto";
import type { Cluster, Machine, Node } from "../api/capi.ts";
import { CONTROL_PLANE_NODE_LABEL, HEALTH_CHECK_SUCCEEDED_CONDITION, OWNER_REMEDIATED_CONDITION } from "../api/capi.ts";
import {
  CERTIFICATES_EXPIRY_ANNOTATION,
  DEFAULTS,
  DELETE_MACHINE_ANNOTATION,
  LAST_REMEDIATION_ANNOTATION,
  REMEDIATION_FOR_ANNOTATION,
  MEMBER_NAME_ANNOTATION,
  MEMBER_REMOVED_ANNOTATION,
  MIN_CERTIFICATES_EXPIRY_DAYS,
  PAUSED_ANNOTATION,
  PRE_TERMINATE_HOOK,
  PRE_TERMINATE_HOOK_PREFIX,
  REMOVE_MEMBER_ANNOTATION,
  TEMPLATE_HASH_ANNOTATION,
} from "../api/constants.ts";
import { durationOr } from "../api/duration.ts";
import { defaultMemberRemoval } from "../api/flavour.ts";
import { canonicalVersion } from "../api/version.ts";
import { readRemediation } from "./remediation-record.ts";
import type { ForeignMachine } from "../api/ownership.ts";
import type { QuorumControlPlane } from "../api/types.ts";
import type { ApiServerReadiness } from "../ports/index.ts";
import type {
  ClusterView,
  ControlPlaneView,
  EtcdView,
  ForeignMachineView,
  MachineView,
  NodeView,
  RemediationRecord,
  Snapshot,
  WorkloadStepsView,
  WorkloadView,
} from "../core/snapshot.ts";

export interface Observation {
  now: number;
  controlPlane: QuorumControlPlane;
  cluster: Cluster;
  machines: Machine[];
  nodes: Node[];
  /** Whether the workload API exists and answered the Node list (absent: no workload API to ask). */
  workload?: WorkloadView;
  /** The bootstrap flavour's workload steps, when it has any and the workload API is expected. */
  workloadSteps?: WorkloadStepsView;
  /** What etcd showed, with each member's memory (core/memory.ts) recalled from status and updated. */
  etcd: EtcdView;
  /**
   * When each Machine's API server serving certificate expires (epoch ms, by Machine name), as read over TLS this
   * reconcile for Machines whose annotation does not say yet (src/controller/certificates-expiry.ts).
   */
  certificatesExpiries?: Record<string, number>;
  /** Each Machine's own API server as dialled this reconcile (kubeadm), by Machine name. */
  apiServers?: Record<string, ApiServerReadiness>;
  /** Machines listed with ours that claimMachines (src/api/ownership.ts) found not to be ours. */
  foreignMachines?: ForeignMachine[];
}

export function buildSnapshot(observation: Observation): Snapshot {
  const { now, controlPlane, cluster } = observation;
  return {
    now,
    controlPlane: controlPlaneView(controlPlane),
    cluster: clusterView(cluster, observation.foreignMachines ?? []),
    machines: observation.machines
      .map((machine) => withObservedExpiry(readMachine(machine), observation.certificatesExpiries))
      .map((view) => {
        const apiServer = observation.apiServers?.[view.name];
        return apiServer ? { ...view, apiServer: { ready: apiServer.ready, detail: apiServer.detail } } : view;
      })
      .sort((a, b) => a.name.localeCompare(b.name)),
    nodes: observation.nodes.map(nodeView).sort((a, b) => a.name.localeCompare(b.name)),
    ...(observation.workload ? { workload: observation.workload } : {}),
    ...(observation.workloadSteps ? { workloadSteps: observation.workloadSteps } : {}),
    etcd: observation.etcd,
  };
}

/** The expiry read over TLS, for a Machine whose annotation does not say. */
function withObservedExpiry(view: MachineView, observed: Record<string, number> | undefined): MachineView {
  const expiry = observed?.[view.name];
  return view.certificatesExpiry === undefined && expiry !== undefined ? { ...view, certificatesExpiry: expiry } : view;
}

/**
 * What a Machine is made from that needs a new Machine to change: the infrastructure and bootstrap templates. A
 * Machine carrying another hash is outdated and gets rolled out. The template's metadata and deletion timeouts are
 * not in it, nor are readiness gates and taints: they reach existing Machines in place (src/core/in-place.ts). The
 * material keeps the keys it had before the v1beta2 layout moved the refs under spec.
 */
export function machineTemplateHash(qcp: QuorumControlPlane): string {
  return hashOf(templateRefs(qcp));
}

/**
 * The hash releases before in-place propagation recorded, the metadata included. A Machine carrying it for the
 * current spec is up to date; the in-place step gives it the current hash.
 */
export function legacyMachineTemplateHash(qcp: QuorumControlPlane): string {
  return hashOf({ metadata: sortKeys(qcp.spec.machineTemplate.metadata ?? {}), ...templateRefs(qcp) });
}

function templateRefs(qcp: QuorumControlPlane) {
  const template = qcp.spec.machineTemplate;
  const { infrastructureRef, bootstrapConfigTemplateRef } = template.spec;
  return {
    infrastructureRef: { kind: infrastructureRef.kind, name: infrastructureRef.name },
    bootstrapConfigTemplateRef: { kind: bootstrapConfigTemplateRef.kind, name: bootstrapConfigTemplateRef.name },
  };
}

function hashOf(material: object): string {
  return createHash("sha256").update(JSON.stringify(material)).digest("hex").slice(0, 10);
}

/**
 * The last remediation, from the annotation (which `clusterctl move` carries) or, when it is absent or unreadable
 * (a hand edit), from status.lastRemediation, where releases before the annotation kept it.
 */
function lastRemediation(qcp: QuorumControlPlane): RemediationRecord | undefined {
  const recorded = readRemediation(qcp.metadata.annotations?.[LAST_REMEDIATION_ANNOTATION]);
  if (recorded) return recorded;
  const kept = qcp.status?.lastRemediation;
  return kept ? readRemediation(JSON.stringify(kept)) : undefined;
}

function controlPlaneView(qcp: QuorumControlPlane): ControlPlaneView {
  const key = `QuorumControlPlane ${qcp.metadata.namespace}/${qcp.metadata.name}`;
  const spec = qcp.spec;
  const rolling = spec.rollout?.strategy?.rollingUpdate;
  const last = lastRemediation(qcp);
  const rolloutAfter = spec.rollout?.after ? Date.parse(spec.rollout.after) : undefined;
  const certificatesExpiryDays = spec.rollout?.before?.certificatesExpiryDays;
  const deletionStartedAt = qcp.metadata.deletionTimestamp ? Date.parse(qcp.metadata.deletionTimestamp) : undefined;
  // A control plane being deleted is taken down with the defaults in place of invalid settings: refusing to plan would
  // keep its finalizer (and its namespace) forever over a setting that no longer matters.
  const duration = (field: string, text: string | undefined, defaultMs: number): number => {
    if (deletionStartedAt === undefined) return durationOr(field, text, defaultMs);
    try {
      return durationOr(field, text, defaultMs);
    } catch {
      return defaultMs;
    }
  };
  return {
    namespace: qcp.metadata.namespace ?? "default",
    name: qcp.metadata.name,
    generation: qcp.metadata.generation ?? 0,
    replicas: spec.replicas ?? 1,
    version: canonicalVersion(spec.version),
    templateHash: machineTemplateHash(qcp),
    legacyTemplateHash: legacyMachineTemplateHash(qcp),
    ...(rolloutAfter !== undefined && !Number.isNaN(rolloutAfter) ? { rolloutAfter } : {}),
    // The CRD refuses less than the minimum; the field is newer than any object stored without that rule.
    ...(typeof certificatesExpiryDays === "number" && certificatesExpiryDays >= MIN_CERTIFICATES_EXPIRY_DAYS
      ? { certificatesExpiryDays }
      : {}),
    maxSurge: rolling?.maxSurge ?? DEFAULTS.maxSurge,
    memberRemoval: rolling?.memberRemoval ?? defaultMemberRemoval(qcp),
    deleting: Boolean(qcp.metadata.deletionTimestamp),
    paused: qcp.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined,
    removeMemberIds: (qcp.metadata.annotations?.[REMOVE_MEMBER_ANNOTATION] ?? "")
      .split(",")
      .map((id) => id.trim())
      .filter((id) => id !== ""),
    remediation: {
      maxRetry: spec.remediation?.maxRetry ?? DEFAULTS.remediationMaxRetry,
      retryPeriodMs: duration(
        `${key} spec.remediation.retryPeriod`,
        spec.remediation?.retryPeriod,
        DEFAULTS.remediationRetryPeriodSeconds * 1000,
      ),
      minHealthyPeriodMs: duration(
        `${key} spec.remediation.minHealthyPeriod`,
        spec.remediation?.minHealthyPeriod,
        DEFAULTS.remediationMinHealthyPeriodSeconds * 1000,
      ),
      machineLostAfterMs: duration(
        `${key} spec.remediation.machineLostAfter`,
        spec.remediation?.machineLostAfter,
        DEFAULTS.remediationMachineLostAfterSeconds * 1000,
      ),
      ...(last ? { last } : {}),
    },
    etcd: {
      ghostGracePeriodMs: duration(
        `${key} spec.etcd.ghostMemberGracePeriod`,
        spec.etcd?.ghostMemberGracePeriod,
        DEFAULTS.ghostMemberGracePeriodSeconds * 1000,
      ),
      learnerPromotionTimeoutMs: duration(
        `${key} spec.etcd.learnerPromotionTimeout`,
        spec.etcd?.learnerPromotionTimeout,
        DEFAULTS.learnerPromotionTimeoutSeconds * 1000,
      ),
      learnerStallMs: duration(
        `${key} spec.etcd.learnerStallTimeout`,
        spec.etcd?.learnerStallTimeout,
        DEFAULTS.learnerStallSeconds * 1000,
      ),
      memberJoinGracePeriodMs: duration(
        `${key} spec.etcd.memberJoinGracePeriod`,
        spec.etcd?.memberJoinGracePeriod,
        DEFAULTS.memberJoinGracePeriodSeconds * 1000,
      ),
    },
    deletion: {
      ...(deletionStartedAt !== undefined && !Number.isNaN(deletionStartedAt) ? { startedAt: deletionStartedAt } : {}),
      etcdMemberRemovalTimeoutMs: duration(
        `${key} spec.deletion.etcdMemberRemovalTimeout`,
        spec.deletion?.etcdMemberRemovalTimeout,
        DEFAULTS.deletionEtcdMemberRemovalTimeoutSeconds * 1000,
      ),
    },
  };
}

function clusterView(cluster: Cluster, foreign: ForeignMachine[]): ClusterView {
  const ref = cluster.spec?.controlPlaneRef;
  const failureDomains = (cluster.status?.failureDomains ?? [])
    .filter((domain) => domain.controlPlane !== false)
    .map((domain) => domain.name)
    .sort();
  return {
    name: cluster.metadata.name,
    paused: cluster.spec?.paused === true,
    failureDomains,
    infrastructureReady: cluster.status?.initialization?.infrastructureProvisioned === true,
    // Only with an infrastructure provider: a Cluster without one (etcd-only Machines, the integration stack) may
    // never get an endpoint, and Quorum needs none to run etcd.
    ...(cluster.spec?.infrastructureRef !== undefined &&
    !(cluster.spec.controlPlaneEndpoint?.host && cluster.spec.controlPlaneEndpoint.port)
      ? { awaitingEndpoint: true }
      : {}),
    controlPlaneInitialized: cluster.status?.initialization?.controlPlaneInitialized === true,
    ...(ref ? { controlPlaneRef: { apiGroup: ref.apiGroup ?? "", kind: ref.kind ?? "", name: ref.name ?? "" } } : {}),
    foreignMachines: foreign
      .map((entry): ForeignMachineView => ({
        name: entry.machine.metadata.name,
        owner: entry.owner,
        sameCluster: entry.sameCluster,
        why: entry.why,
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}

/**
 * A Machine as the planner sees it. One Machine that is not a well-formed CAPI Machine (a hand-written object with
 * the control-plane label, a half-applied edit) must not stop the reconcile of the whole control plane (issue 13:
 * hook releases and deletions waited behind it): it is read as far as it can be and carries `malformed`.
 */
export function readMachine(machine: Machine): MachineView {
  const problems = machineProblems(machine);
  try {
    const view = machineView(machine);
    return problems.length > 0 ? { ...view, malformed: problems.join("; ") } : view;
  } catch (error) {
    return minimalMachineView(machine, [...problems, error instanceof Error ? error.message : String(error)]);
  }
}

/** What a CAPI Machine must have for Quorum to judge it (the CRD requires them; a cache may still hold worse). */
function machineProblems(machine: Machine): string[] {
  const spec = (machine as { spec?: Partial<Machine["spec"]> }).spec;
  if (typeof spec !== "object" || spec === null) return ["it has no spec"];
  const problems: string[] = [];
  if (typeof spec.bootstrap !== "object" || spec.bootstrap === null) problems.push("it has no spec.bootstrap");
  if (typeof spec.version !== "string" || spec.version === "") problems.push("it has no spec.version");
  return problems;
}

/** Only the fields that cannot fail to read: name, times, annotations. */
function minimalMachineView(machine: Machine, problems: string[]): MachineView {
  const metadata = machine.metadata ?? { name: "" };
  const annotations = typeof metadata.annotations === "object" && metadata.annotations ? metadata.annotations : {};
  const annotation = (key: string) => (typeof annotations[key] === "string" ? annotations[key] : undefined);
  const deleting = metadata.deletionTimestamp ? Date.parse(metadata.deletionTimestamp) : undefined;
  return {
    name: metadata.name,
    created: Date.parse(metadata.creationTimestamp ?? "") || 0,
    ...(deleting !== undefined && !Number.isNaN(deleting) ? { deleting } : {}),
    version: "",
    memberName: annotation(MEMBER_NAME_ANNOTATION) || metadata.name,
    addresses: [],
    infrastructureReady: false,
    bootstrapReady: false,
    hasPreTerminateHook: annotation(PRE_TERMINATE_HOOK) !== undefined,
    ...(annotation(MEMBER_REMOVED_ANNOTATION) ? { memberRemoved: annotation(MEMBER_REMOVED_ANNOTATION) } : {}),
    remediationRequested: false,
    failed: false,
    markedForDeletion: annotation(DELETE_MACHINE_ANNOTATION) !== undefined,
    malformed: problems.join("; "),
  };
}

function machineView(machine: Machine): MachineView {
  const annotations = machine.metadata.annotations ?? {};
  const status = machine.status ?? {};
  const nodeName = status.nodeRef?.name || undefined;
  const ownerRemediated = status.conditions?.find((condition) => condition.type === OWNER_REMEDIATED_CONDITION);
  const healthCheck = status.conditions?.find((condition) => condition.type === HEALTH_CHECK_SUCCEEDED_CONDITION);
  const failure = status.deprecated?.v1beta1;
  const { finished: drainFinished, detail: drainDetail } = drainState(machine);
  const certificatesExpiry = Date.parse(annotations[CERTIFICATES_EXPIRY_ANNOTATION] ?? "");
  const remediationFor = readRemediation(annotations[REMEDIATION_FOR_ANNOTATION]);
  const conditionTrue = (type: string) =>
    status.conditions?.some((condition) => condition.type === type && condition.status === "True") === true;
  return {
    name: machine.metadata.name,
    created: Date.parse(machine.metadata.creationTimestamp ?? "") || 0,
    ...(machine.metadata.deletionTimestamp ? { deleting: Date.parse(machine.metadata.deletionTimestamp) } : {}),
    ...(remediationFor ? { remediationFor } : {}),
    version: typeof machine.spec.version === "string" ? machine.spec.version : "",
    ...(annotations[TEMPLATE_HASH_ANNOTATION] ? { templateHash: annotations[TEMPLATE_HASH_ANNOTATION] } : {}),
    ...(machine.spec.failureDomain || status.failureDomain
      ? { failureDomain: machine.spec.failureDomain || status.failureDomain }
      : {}),
    memberName: annotations[MEMBER_NAME_ANNOTATION] || nodeName || machine.metadata.name,
    ...(nodeName ? { nodeName } : {}),
    ...(machine.spec.providerID ? { providerID: machine.spec.providerID } : {}),
    addresses: (status.addresses ?? []).map((address) => address.address ?? "").filter((address) => address !== ""),
    infrastructureReady: status.initialization?.infrastructureProvisioned === true,
    bootstrapReady:
      status.initialization?.bootstrapDataSecretCreated === true || Boolean(machine.spec.bootstrap?.dataSecretName),
    ...(conditionTrue("Ready") ? { capiReady: true } : {}),
    ...(conditionTrue("Available") ? { capiAvailable: true } : {}),
    // An unreadable value (a hand edit) counts as an unknown expiry: nothing is rolled out on a guess.
    ...(Number.isNaN(certificatesExpiry) ? {} : { certificatesExpiry }),
    hasPreTerminateHook: annotations[PRE_TERMINATE_HOOK] !== undefined,
    ...(annotations[MEMBER_REMOVED_ANNOTATION] ? { memberRemoved: annotations[MEMBER_REMOVED_ANNOTATION] } : {}),
    ...otherHooks(annotations),
    remediationRequested: ownerRemediated?.status === "False" && healthCheck?.status === "False",
    ...(ownerRemediated?.status === "False" && healthCheck?.status === "True" ? { remediationWithdrawn: true } : {}),
    failed: Boolean(failure?.failureReason || failure?.failureMessage) || status.phase === "Failed",
    markedForDeletion: annotations[DELETE_MACHINE_ANNOTATION] !== undefined,
    ...(drainFinished !== undefined ? { drainFinished } : {}),
    ...(drainDetail ? { drainDetail } : {}),
  };
}

/** The pre-terminate hooks on a Machine besides Quorum's, by the name after the prefix (sorted, for messages). */
function otherHooks(annotations: Record<string, string>): { otherPreTerminateHooks?: string[] } {
  const others = Object.keys(annotations)
    .filter((key) => key.startsWith(PRE_TERMINATE_HOOK_PREFIX) && key !== PRE_TERMINATE_HOOK)
    .map((key) => key.slice(PRE_TERMINATE_HOOK_PREFIX.length))
    .sort();
  return others.length > 0 ? { otherPreTerminateHooks: others } : {};
}

/** Reasons of CAPI's v1beta2 Deleting condition that come before the Node is drained and its volumes detached. */
const BEFORE_DRAIN_DONE = new Set(["WaitingForPreDrainHook", "DrainingNode", "WaitingForVolumeDetach"]);

/** The longest drain detail kept: CAPI lists every pod it waits on, and status messages should stay readable. */
const DRAIN_DETAIL_MAX = 300;

/**
 * Whether CAPI finished draining a deleting Machine, read from its Deleting condition, and while it has not, the
 * condition's message on one line ("Drain not completed yet (started at ...): * Pod kube-system/coredns-...:
 * deletionTimestamp set, but still not removed from the Node"). Unknown (finished undefined) when the Machine is not
 * deleting or has no such condition: the planner then treats the drain as done.
 */
function drainState(machine: Machine): { finished?: boolean; detail?: string } {
  if (!machine.metadata.deletionTimestamp) return {};
  const deleting = machine.status?.conditions?.find((condition) => condition.type === "Deleting");
  if (!deleting || deleting.status !== "True" || !deleting.reason) return {};
  const finished = !BEFORE_DRAIN_DONE.has(deleting.reason);
  const line = (deleting.message ?? "")
    .split("\n")
    .map((part) => part.trim())
    .filter(Boolean)
    .join(" ");
  if (finished || !line) return { finished };
  return {
    finished,
    detail: line.length > DRAIN_DETAIL_MAX ? `${line.slice(0, DRAIN_DETAIL_MAX - 1)}…` : line,
  };
}

function nodeView(node: Node): NodeView {
  const condition = node.status?.conditions?.find((candidate) => candidate.type === "Ready");
  const ready = condition?.status === "True";
  const since = ready ? Number.NaN : Date.parse(condition?.lastTransitionTime ?? "");
  return {
    name: node.metadata.name,
    ...(node.spec?.providerID ? { providerID: node.spec.providerID } : {}),
    ready,
    ...(Number.isFinite(since) ? { notReadySince: since } : {}),
    addresses: (node.status?.addresses ?? []).map((address) => address.address),
    controlPlaneLabel: node.metadata.labels?.[CONTROL_PLANE_NODE_LABEL] !== undefined,
  };
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  }
  return value;
}
