// The process provider's API: infrastructure kinds (ProcessCluster, ProcessMachine and their templates) and bootstrap
// kinds (ProcessBootstrapConfig and its template), served as v1alpha1 and labelled with the CAPI v1beta2 contract
// so CAPI core resolves references to them by group and kind. Only the fields CAPI's v1beta2 contract reads, plus
// what the provider itself reports (loopback address, process IDs, bootstrap phase), are in the schemas.
import type { V1CustomResourceDefinition, V1JSONSchemaProps } from "@kubernetes/client-node";

export const INFRA_GROUP = "infrastructure.cluster.x-k8s.io";
export const BOOTSTRAP_GROUP = "bootstrap.cluster.x-k8s.io";
export const PROVIDER_VERSION = "v1alpha1";
export const INFRA_API_VERSION = `${INFRA_GROUP}/${PROVIDER_VERSION}`;
export const BOOTSTRAP_API_VERSION = `${BOOTSTRAP_GROUP}/${PROVIDER_VERSION}`;

/** Plural resource names, as used in API paths. */
export const RESOURCE = {
  ProcessCluster: "processclusters",
  ProcessClusterTemplate: "processclustertemplates",
  ProcessMachine: "processmachines",
  ProcessMachineTemplate: "processmachinetemplates",
  ProcessBootstrapConfig: "processbootstrapconfigs",
  ProcessBootstrapConfigTemplate: "processbootstrapconfigtemplates",
} as const;

const object = (
  properties: Record<string, V1JSONSchemaProps>,
  extra: Partial<V1JSONSchemaProps> = {},
): V1JSONSchemaProps => ({ type: "object", properties, ...extra });
const string: V1JSONSchemaProps = { type: "string" };
const boolean: V1JSONSchemaProps = { type: "boolean" };
const integer: V1JSONSchemaProps = { type: "integer" };
const stringMap: V1JSONSchemaProps = { type: "object", additionalProperties: { type: "string" } };

const conditions: V1JSONSchemaProps = {
  type: "array",
  items: object(
    {
      type: string,
      status: string,
      reason: string,
      message: string,
      lastTransitionTime: string,
      observedGeneration: integer,
    },
    { required: ["type", "status"] },
  ),
};

const endpoint = object({ host: string, port: integer });

const processClusterSpec = object({
  controlPlaneEndpoint: endpoint,
  /**
   * Loopback (default): each Machine gets a loopback address, its processes run on this host. Namespaces: each Machine
   * runs in network, mount and UTS namespaces of its own on the e2e run's bridge, as kubeadm Machines need.
   */
  machineNetwork: string,
});

const processMachineSpec = object({
  /** process://<namespace>/<machine>, set once the Machine has its loopback address. */
  providerID: string,
  /** Extra kube-apiserver flags for this Machine, e.g. ["--v=2"]. */
  apiServerExtraArgs: { type: "array", items: string },
  /**
   * kubeadm Machines: Off stops the "VM" as a reboot's first half (its kubelet stops with every static pod; its disk
   * and address stay), On (the default) boots it again. Like a cloud's stop and start, it never touches the Machine.
   */
  powerState: string,
});

const processMachineStatus = object({
  initialization: object({ provisioned: boolean }),
  ready: boolean,
  addresses: { type: "array", items: object({ type: string, address: string }) },
  /**
   * Where the Machine is in its bootstrap: Provisioned, JoiningEtcd, Learner, StartingAPIServer, Running, Stopped;
   * PoweredOff while spec.powerState is Off.
   */
  phase: string,
  etcdMemberName: string,
  processes: object({
    etcd: object({ pid: integer }),
    apiServer: object({ pid: integer }),
    kubelet: object({ pid: integer }),
  }),
  /** kubeadm Machines: the host name, which kubeadm gives the Node and the etcd member. */
  hostName: string,
  conditions,
});

const bootstrapConfigSpec = object({
  /** Free text copied into the bootstrap data Secret; the process provider needs nothing from it. */
  note: string,
});

function crd(
  group: string,
  kind: keyof typeof RESOURCE,
  spec: V1JSONSchemaProps,
  status: V1JSONSchemaProps | undefined,
  columns: { name: string; type: string; jsonPath: string }[] = [],
): V1CustomResourceDefinition {
  const plural = RESOURCE[kind];
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${plural}.${group}`,
      // CAPI reads this label to learn which of our versions implements its v1beta2 contract.
      labels: {
        "cluster.x-k8s.io/v1beta2": PROVIDER_VERSION,
        "cluster.x-k8s.io/provider": group === INFRA_GROUP ? "infrastructure-process" : "bootstrap-process",
      },
    },
    spec: {
      group,
      scope: "Namespaced",
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), categories: ["cluster-api"] },
      versions: [
        {
          name: PROVIDER_VERSION,
          served: true,
          storage: true,
          ...(status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: [
            ...columns,
            { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
          ],
          schema: {
            openAPIV3Schema: object({
              apiVersion: string,
              kind: string,
              metadata: { type: "object" },
              spec,
              ...(status ? { status } : {}),
            }),
          },
        },
      ],
    },
  };
}

const template = (inner: V1JSONSchemaProps) =>
  object(
    {
      template: object(
        { metadata: object({ labels: stringMap, annotations: stringMap }), spec: inner },
        { required: ["spec"] },
      ),
    },
    { required: ["template"] },
  );

export function processProviderCRDs(): V1CustomResourceDefinition[] {
  return [
    crd(
      INFRA_GROUP,
      "ProcessCluster",
      processClusterSpec,
      object({
        initialization: object({ provisioned: boolean }),
        ready: boolean,
        /** The loopback /24 the cluster's Machines get addresses from, e.g. "127.31.7". */
        subnet: string,
        loadBalancer: object({
          backends: { type: "array", items: object({ machine: string, address: string, healthy: boolean }) },
        }),
        conditions,
      }),
      [
        { name: "Endpoint", type: "string", jsonPath: ".spec.controlPlaneEndpoint.host" },
        { name: "Provisioned", type: "boolean", jsonPath: ".status.initialization.provisioned" },
      ],
    ),
    // For a ClusterClass's spec.infrastructure (the v1beta2 InfraClusterTemplate contract: spec.template.spec). The
    // topology controller clones it into the Cluster's ProcessCluster; the endpoint stays the provider's to set.
    crd(INFRA_GROUP, "ProcessClusterTemplate", template(processClusterSpec), undefined),
    crd(INFRA_GROUP, "ProcessMachine", processMachineSpec, processMachineStatus, [
      { name: "Address", type: "string", jsonPath: ".status.addresses[0].address" },
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "ProviderID", type: "string", jsonPath: ".spec.providerID" },
    ]),
    crd(INFRA_GROUP, "ProcessMachineTemplate", template(processMachineSpec), undefined),
    crd(
      BOOTSTRAP_GROUP,
      "ProcessBootstrapConfig",
      bootstrapConfigSpec,
      object({
        initialization: object({ dataSecretCreated: boolean }),
        ready: boolean,
        dataSecretName: string,
        conditions,
      }),
      [{ name: "DataSecret", type: "string", jsonPath: ".status.dataSecretName" }],
    ),
    crd(BOOTSTRAP_GROUP, "ProcessBootstrapConfigTemplate", template(bootstrapConfigSpec), undefined),
  ];
}
