// The management cluster as the reconciler sees it: QuorumControlPlanes, Clusters, Machines, templates and their
// clones, Events. Thin and idempotent: AlreadyExists on create and NotFound on delete count as success.
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import type { Cluster, Machine, MetaV1Condition } from "../../api/capi.ts";
import {
  AGGREGATION_LABEL,
  API_VERSION,
  CAPI_API_VERSION,
  CAPI_GROUP,
  CAPI_VERSION,
  CONTRACT_LABEL_V1BETA2,
  GROUP,
  KIND,
  LABEL_CONTROL_PLANE_NAME,
  PLURAL,
  VERSION,
} from "../../api/constants.ts";
import { formatLabelValue } from "../../api/label-value.ts";
import { concernsControlPlane } from "../../api/ownership.ts";
import type { ObjectRef, OwnerReference, QuorumControlPlane, QuorumControlPlaneStatus } from "../../api/types.ts";
import { groupOf, type Unstructured } from "../../api/objects.ts";
import { statusMessageOf, statusReasonOf } from "../errors.ts";
import type { InPlacePatch } from "../../ports/management.ts";

export const FIELD_MANAGER = "quorum";

/** A referenced object (template, Cluster) that does not exist: the user must create it or fix the reference. */
export class ReferenceNotFoundError extends Error {
  constructor(
    readonly kind: string,
    readonly namespace: string,
    readonly objectName: string,
    readonly referencedBy: string,
  ) {
    super(
      `${kind} ${namespace}/${objectName} referenced by ${referencedBy} was not found: create it or correct the reference`,
    );
    this.name = "ReferenceNotFoundError";
  }
}

/** Quorum may not patch a provider's object: its users must grant the verb through the aggregated ClusterRole. */
export class PatchForbiddenError extends Error {
  constructor(object: Unstructured, field: string) {
    const group = groupOf(object.apiVersion);
    const resource = `${pluralOf(object.kind)}${group ? `.${group}` : ""}`;
    super(
      `${object.kind} ${object.metadata.namespace ?? ""}/${object.metadata.name}: Quorum may not patch ${resource} ` +
        `(to set metadata.${field}): grant the "patch" verb on ${resource} in a ClusterRole labelled ` +
        `${AGGREGATION_LABEL}: "true" (as config/samples/process-provider-rbac.yaml does for its kinds)`,
    );
    this.name = "PatchForbiddenError";
  }
}

/**
 * Any other refused patch, in one line: the object, the HTTP code, the Status reason and message (ApiException's own
 * message carries the whole response body and headers, which made a log line of every template conflict). `code`
 * stays, so a conflict is still told apart (isConflict).
 */
export class PatchRefusedError extends Error {
  readonly code: number;

  constructor(object: Unstructured, field: string, error: ApiException<unknown>) {
    const reason = statusReasonOf(error.body);
    super(
      `${object.kind} ${object.metadata.namespace ?? ""}/${object.metadata.name}: patching metadata.${field} was ` +
        `refused with HTTP ${error.code}${reason ? ` (${reason})` : ""}: ${statusMessageOf(error.body)}`,
      { cause: error },
    );
    this.name = "PatchRefusedError";
    this.code = error.code;
  }
}

export class ManagementClient {
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  /** group → served version of the CAPI contract, from each CRD's contract label; CRDs rarely change. */
  private readonly contractVersions = new Map<string, string>();

  constructor(kubeConfig: KubeConfig) {
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
  }

  async getControlPlane(namespace: string, name: string): Promise<QuorumControlPlane | undefined> {
    return this.read<QuorumControlPlane>(API_VERSION, KIND, namespace, name);
  }

  async getCluster(namespace: string, name: string): Promise<Cluster | undefined> {
    return this.read<Cluster>(CAPI_API_VERSION, "Cluster", namespace, name);
  }

  /** The same selection as the informer-backed one: every Machine with a control-plane-name label, then the shared rule. */
  async listControlPlaneMachines(
    namespace: string,
    controlPlaneName: string,
    clusterName?: string,
  ): Promise<Machine[]> {
    const selector =
      clusterName === undefined
        ? `${LABEL_CONTROL_PLANE_NAME}=${formatLabelValue(controlPlaneName)}`
        : LABEL_CONTROL_PLANE_NAME;
    const list = await this.objects.list<KubernetesObject>(
      CAPI_API_VERSION,
      "Machine",
      namespace,
      undefined,
      undefined,
      undefined,
      undefined,
      selector,
    );
    return (list.items as unknown as Machine[]).filter((machine) =>
      concernsControlPlane(machine, controlPlaneName, clusterName),
    );
  }

  /** Reads a referenced object, resolving its version from the CRD's contract label when the ref has only a group. */
  async getReferenced(ref: ObjectRef, namespace: string, referencedBy: string): Promise<Unstructured> {
    const apiVersion = await this.resolveApiVersion(ref);
    const object = await this.read<Unstructured>(apiVersion, ref.kind, namespace, ref.name);
    if (!object) throw new ReferenceNotFoundError(ref.kind, namespace, ref.name, referencedBy);
    return object;
  }

  /** Creates the object; an object of that name that already exists is success (a retry after a crash). */
  async createIfAbsent(object: {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string; namespace?: string };
  }): Promise<"created" | "exists"> {
    try {
      await this.objects.create(object as KubernetesObject, undefined, undefined, FIELD_MANAGER);
      return "created";
    } catch (error) {
      if (error instanceof ApiException && error.code === 409) return "exists";
      throw error;
    }
  }

  /** Deletes a Machine; one that is already gone is success. */
  async deleteMachine(namespace: string, name: string): Promise<void> {
    try {
      await this.objects.delete({ apiVersion: CAPI_API_VERSION, kind: "Machine", metadata: { name, namespace } });
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return;
      throw error;
    }
  }

  /**
   * Sets (string) or removes (null) annotations with a merge patch that carries the resourceVersion it was
   * decided on, so a decision made on a stale Machine fails with a conflict instead of acting.
   */
  async patchAnnotations(
    apiVersion: string,
    kind: string,
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<string | undefined> {
    const patch = {
      apiVersion,
      kind,
      metadata: { name, namespace, annotations, ...(resourceVersion ? { resourceVersion } : {}) },
    };
    const written = await this.mergePatch(patch);
    return written.metadata?.resourceVersion;
  }

  /** spec.machineTemplate's in-place fields (labels, annotations, a Machine's deletion timeouts); see the port. */
  async patchInPlace(
    ref: ObjectRef,
    namespace: string,
    patch: InPlacePatch,
    resourceVersion?: string,
  ): Promise<string | undefined> {
    const body = {
      apiVersion: await this.resolveApiVersion(ref),
      kind: ref.kind,
      metadata: {
        name: ref.name,
        namespace,
        ...(patch.labels ? { labels: patch.labels } : {}),
        ...(patch.annotations ? { annotations: patch.annotations } : {}),
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      ...(patch.deletion || patch.readinessGates || patch.taints
        ? {
            spec: {
              ...(patch.deletion ? { deletion: patch.deletion } : {}),
              ...(patch.readinessGates ? { readinessGates: patch.readinessGates } : {}),
              ...(patch.taints ? { taints: patch.taints } : {}),
            },
          }
        : {}),
    };
    try {
      const written = await this.mergePatch(body);
      return written.metadata?.resourceVersion;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      if (error instanceof ApiException && error.code === 403)
        throw new PatchForbiddenError(
          { apiVersion: body.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace } },
          "labels and metadata.annotations",
        );
      throw error;
    }
  }

  /**
   * A merge patch replaces the whole list, so it carries the resourceVersion the list was read at: a reference
   * someone added meanwhile makes it a conflict (retried on the next reconcile), never a lost reference.
   */
  async setOwnerReferences(object: Unstructured, ownerReferences: OwnerReference[]): Promise<void> {
    const { name, namespace, resourceVersion } = object.metadata;
    const patch = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: { name, namespace, ownerReferences, ...(resourceVersion ? { resourceVersion } : {}) },
    };
    try {
      await this.mergePatch(patch);
    } catch (error) {
      if (error instanceof ApiException && error.code === 403) throw new PatchForbiddenError(object, "ownerReferences");
      if (error instanceof ApiException) throw new PatchRefusedError(object, "ownerReferences", error);
      throw error;
    }
  }

  /** A JSON merge patch (name, namespace and the fields to change), as Quorum's field manager. */
  private mergePatch(patch: {
    apiVersion: string;
    kind: string;
    metadata: Record<string, unknown>;
    spec?: Record<string, unknown>;
  }) {
    return this.objects.patch(
      patch as KubernetesObject,
      undefined,
      undefined,
      FIELD_MANAGER,
      undefined,
      PatchStrategy.MergePatch,
    );
  }

  async setFinalizers(controlPlane: QuorumControlPlane, finalizers: string[]): Promise<string | undefined> {
    const patch = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: {
        name: controlPlane.metadata.name,
        namespace: controlPlane.metadata.namespace,
        finalizers,
        resourceVersion: controlPlane.metadata.resourceVersion,
      },
    };
    const written = await this.mergePatch(patch);
    return written.metadata?.resourceVersion;
  }

  /** A Machine's status.conditions through the /status subresource, with the resourceVersion precondition. */
  async setMachineConditions(
    namespace: string,
    name: string,
    conditions: MetaV1Condition[],
    resourceVersion: string,
  ): Promise<string | undefined> {
    try {
      const response = (await this.custom.patchNamespacedCustomObjectStatus(
        {
          group: CAPI_GROUP,
          version: CAPI_VERSION,
          namespace,
          plural: "machines",
          name,
          body: { metadata: { resourceVersion }, status: { conditions } },
          fieldManager: FIELD_MANAGER,
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      )) as Machine;
      return response.metadata?.resourceVersion;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  /** Writes status through the /status subresource with a JSON merge patch (only the given fields change). */
  async patchStatus(
    controlPlane: QuorumControlPlane,
    status: Partial<QuorumControlPlaneStatus> | Record<string, unknown>,
  ): Promise<QuorumControlPlane> {
    const response: unknown = await this.custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        namespace: controlPlane.metadata.namespace ?? "default",
        plural: PLURAL,
        name: controlPlane.metadata.name,
        body: { status },
        fieldManager: FIELD_MANAGER,
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    return response as QuorumControlPlane;
  }

  async event(
    controlPlane: QuorumControlPlane,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
    now: Date,
  ): Promise<void> {
    const namespace = controlPlane.metadata.namespace ?? "default";
    const timestamp = now.toISOString();
    await this.core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: `${controlPlane.metadata.name}.`, namespace },
        involvedObject: {
          apiVersion: controlPlane.apiVersion,
          kind: controlPlane.kind,
          name: controlPlane.metadata.name,
          namespace,
          uid: controlPlane.metadata.uid ?? "",
        },
        type,
        reason,
        message: message.slice(0, 1000),
        source: { component: "quorum-controller" },
        firstTimestamp: new Date(timestamp),
        lastTimestamp: new Date(timestamp),
        count: 1,
        reportingComponent: "quorum-controller",
      },
    });
  }

  async resolveApiVersion(ref: ObjectRef): Promise<string> {
    if (ref.apiVersion) return ref.apiVersion;
    const group = ref.apiGroup ?? "";
    const crdName = `${pluralOf(ref.kind)}.${group}`;
    const cached = this.contractVersions.get(crdName);
    if (cached) return `${group}/${cached}`;
    const crd = await this.read<KubernetesObject & { spec?: { versions?: { name: string; storage?: boolean }[] } }>(
      "apiextensions.k8s.io/v1",
      "CustomResourceDefinition",
      undefined,
      crdName,
    );
    if (!crd)
      throw new ReferenceNotFoundError(
        "CustomResourceDefinition",
        "",
        crdName,
        `a reference to ${ref.kind} ${ref.name}`,
      );
    // The contract label lists the versions that implement the contract ("v1alpha1_v1beta1"); the last is newest.
    const fromLabel = crd.metadata?.labels?.[CONTRACT_LABEL_V1BETA2]?.split("_").pop();
    const version = fromLabel ?? crd.spec?.versions?.find((v) => v.storage)?.name;
    if (!version)
      throw new Error(
        `CustomResourceDefinition ${crdName} has no ${CONTRACT_LABEL_V1BETA2} label and no storage version: label it with the contract version`,
      );
    this.contractVersions.set(crdName, version);
    return `${group}/${version}`;
  }

  private async read<T>(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    try {
      return (await this.objects.read({
        apiVersion,
        kind,
        metadata: { name, ...(namespace ? { namespace } : {}) },
      })) as unknown as T;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }
}

/** Lowercase plural as CAPI computes CRD names: "ProcessMachineTemplate" → "processmachinetemplates". */
export function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower.endsWith("s")) return `${lower}es`;
  if (lower.endsWith("y") && !/[aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}
