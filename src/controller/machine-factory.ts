// Builds the objects one new control-plane Machine needs: a clone of the infrastructure template, a clone of the
// bootstrap config template, and the Machine pointing at both. Pure; the executor creates them in that order,
// with deterministic names so that a crash between the three creates is finished, not duplicated, next time.
import { createHash } from "node:crypto";
import type { Machine } from "../api/capi.ts";
import {
  API_VERSION,
  CAPI_API_VERSION,
  KIND,
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE,
  LABEL_CONTROL_PLANE_NAME,
  LABEL_WATCH_FILTER,
  PRE_TERMINATE_HOOK,
  REMEDIATION_FOR_ANNOTATION,
  TEMPLATE_HASH_ANNOTATION,
  TEMPLATE_METADATA_ANNOTATION,
} from "../api/constants.ts";
import { canonicalVersion } from "../api/version.ts";
import { formatLabelValue } from "../api/label-value.ts";
import { groupOf, type Unstructured } from "../api/objects.ts";
import type { OwnerReference, QuorumControlPlane } from "../api/types.ts";
import { templateKeysRecord, templateMetadata, type DeletionSeconds } from "../core/in-place.ts";
import type { RemediationRecord } from "../core/snapshot.ts";
import { remediationText } from "./remediation-record.ts";

export type { Unstructured };

export interface NewMachineObjects {
  infrastructure: Unstructured;
  bootstrap: Unstructured;
  machine: Machine;
}

export interface MachineInputs {
  controlPlane: QuorumControlPlane;
  clusterName: string;
  machineName: string;
  failureDomain?: string;
  templateHash: string;
  /** The remediation this Machine replaces: recorded on it (REMEDIATION_FOR_ANNOTATION). */
  remediationFor?: RemediationRecord;
  infrastructureTemplate: Unstructured;
  bootstrapConfigTemplate: Unstructured;
}

/**
 * The longest Machine name Quorum makes. Infrastructure providers name the host after the Machine (CAPD, CAPV, CAPO,
 * Metal3), and the kubelet refuses to register a Node whose hostname is longer than a label value, 63 characters;
 * ClusterClass names a control plane `<cluster>-<random>`, up to 63 characters itself. KCP trims to the same.
 */
export const MAX_MACHINE_NAME_LENGTH = 63;

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 5);
}

/**
 * The name of the next Machine: stable for a given version, template and index, so a retry after a crash
 * picks the same name and finds its half-created objects (AlreadyExists counts as success). At most
 * MAX_MACHINE_NAME_LENGTH characters: a longer control-plane name is cut, and its hash then covers the whole name, so
 * two control planes whose names share the kept prefix still name their Machines apart.
 */
export function nextMachineName(
  controlPlaneName: string,
  version: string,
  templateHash: string,
  takenNames: ReadonlySet<string>,
): string {
  const flavour = shortHash(`${version}/${templateHash}`);
  let cutFlavour: string | undefined;
  for (let index = 0; ; index++) {
    let candidate = `${controlPlaneName}-${flavour}-${index}`;
    if (candidate.length > MAX_MACHINE_NAME_LENGTH) {
      cutFlavour ??= shortHash(`${controlPlaneName}/${version}/${templateHash}`);
      const suffix = `-${cutFlavour}-${index}`;
      // Cut where a DNS name may end: never on a "-" or "." (the suffix starts with "-").
      const kept = controlPlaneName.slice(0, MAX_MACHINE_NAME_LENGTH - suffix.length).replace(/[-.]+$/, "");
      candidate = `${kept}${suffix}`;
    }
    if (!takenNames.has(candidate)) return candidate;
  }
}

export function buildMachineObjects(inputs: MachineInputs): NewMachineObjects {
  const { controlPlane, clusterName, machineName } = inputs;
  const namespace = controlPlane.metadata.namespace ?? "default";
  const fromTemplate = machineTemplateMetadata(controlPlane);
  // The QuorumControlPlane's watch-filter label, unless the template sets its own: a CAPI core or infrastructure
  // provider run with the same --watch-filter reconciles only objects that carry it (KCP leaves that to the user's
  // machineTemplate labels, and its Machines stall in such a shard until they are added).
  const watchFilter = controlPlane.metadata.labels?.[LABEL_WATCH_FILTER];
  const labels = {
    ...(watchFilter !== undefined ? { [LABEL_WATCH_FILTER]: watchFilter } : {}),
    ...fromTemplate.labels,
    [LABEL_CLUSTER_NAME]: clusterName,
    [LABEL_CONTROL_PLANE]: "",
    [LABEL_CONTROL_PLANE_NAME]: formatLabelValue(controlPlane.metadata.name),
  };
  const owner = ownerReference(controlPlane);
  const clone = (template: Unstructured) =>
    cloneTemplate(template, machineName, namespace, { labels, annotations: fromTemplate.annotations }, owner);
  const infrastructure = clone(inputs.infrastructureTemplate);
  const bootstrap = clone(inputs.bootstrapConfigTemplate);
  const { readinessGates, taints } = controlPlane.spec.machineTemplate.spec;
  const deletion = deletionTimeouts(controlPlane);
  const machine: Machine = {
    apiVersion: CAPI_API_VERSION,
    kind: "Machine",
    metadata: {
      name: machineName,
      namespace,
      labels,
      annotations: {
        ...fromTemplate.annotations,
        [PRE_TERMINATE_HOOK]: "",
        [TEMPLATE_HASH_ANNOTATION]: inputs.templateHash,
        [TEMPLATE_METADATA_ANNOTATION]: templateKeysRecord(fromTemplate),
        ...(inputs.remediationFor ? { [REMEDIATION_FOR_ANNOTATION]: remediationText(inputs.remediationFor) } : {}),
      },
      ownerReferences: [owner],
    },
    spec: {
      clusterName,
      version: canonicalVersion(controlPlane.spec.version),
      bootstrap: { configRef: { apiGroup: groupOf(bootstrap.apiVersion), kind: bootstrap.kind, name: machineName } },
      infrastructureRef: { apiGroup: groupOf(infrastructure.apiVersion), kind: infrastructure.kind, name: machineName },
      ...(inputs.failureDomain ? { failureDomain: inputs.failureDomain } : {}),
      ...(deletion && Object.keys(deletion).length > 0 ? { deletion: { ...deletion } } : {}),
      ...(readinessGates && readinessGates.length > 0 ? { readinessGates: structuredClone(readinessGates) } : {}),
      ...(taints && taints.length > 0 ? { taints: structuredClone(taints) } : {}),
    },
  };
  return { infrastructure, bootstrap, machine };
}

/** spec.machineTemplate.metadata, without the keys Quorum sets itself. */
export function machineTemplateMetadata(controlPlane: QuorumControlPlane): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const metadata = controlPlane.spec.machineTemplate.metadata;
  return templateMetadata({ labels: metadata?.labels ?? {}, annotations: metadata?.annotations ?? {} });
}

function cloneTemplate(
  template: Unstructured,
  name: string,
  namespace: string,
  metadata: { labels: Record<string, string>; annotations: Record<string, string> },
  owner: OwnerReference,
): Unstructured {
  if (!template.kind.endsWith("Template")) {
    throw new Error(
      `${template.kind} ${namespace}/${template.metadata.name} is not a template: spec.machineTemplate refs must name a *Template kind`,
    );
  }
  const inner = template.spec?.template;
  return {
    apiVersion: template.apiVersion,
    kind: template.kind.slice(0, -"Template".length),
    metadata: {
      name,
      namespace,
      labels: { ...(inner?.metadata?.labels ?? {}), ...metadata.labels },
      annotations: {
        ...(inner?.metadata?.annotations ?? {}),
        ...metadata.annotations,
        "cluster.x-k8s.io/cloned-from-name": template.metadata.name,
        "cluster.x-k8s.io/cloned-from-groupkind": `${template.kind}.${groupOf(template.apiVersion)}`,
      },
      ownerReferences: [owner],
    },
    spec: structuredClone(inner?.spec ?? {}),
  };
}

/**
 * The controller ownerRef is what makes a Machine ours (claimMachines in src/api/ownership.ts), so it is written from
 * our own constants and never with an empty UID: such a Machine would be nobody's, and Quorum would create another.
 */
function ownerReference(controlPlane: QuorumControlPlane): OwnerReference {
  const uid = controlPlane.metadata.uid;
  if (!uid)
    throw new Error(
      `${KIND} ${controlPlane.metadata.namespace ?? "default"}/${controlPlane.metadata.name} has no metadata.uid: a Machine owned by it could not be told apart from another owner's; read the object from the API server before creating Machines`,
    );
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: controlPlane.metadata.name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The deletion timeouts spec.machineTemplate sets, as the Machine has them (new Machines, and in place). */
export function deletionTimeouts(controlPlane: QuorumControlPlane): DeletionSeconds {
  return { ...(controlPlane.spec.machineTemplate.spec.deletion ?? {}) };
}
