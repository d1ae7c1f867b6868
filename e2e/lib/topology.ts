// A ClusterClass on the process provider and a Cluster built from it by CAPI's topology controller (the CAPI core
// manager runs with --feature-gates=ClusterTopology=true). Here the user writes only templates, the ClusterClass and
// a Cluster with spec.topology; CAPI creates the ProcessCluster, a per-cluster copy of the ProcessMachineTemplate and
// the QuorumControlPlane (under a generated name, found through Cluster.spec.controlPlaneRef) and keeps them in step
// with the ClusterClass and the topology. No CAPI webhook runs (test/env/README.md), so every object is written
// complete; the topology controller defaults and validates the Cluster's variables itself (there are none here).
import { setTimeout as sleep } from "node:timers/promises";
import type { Cluster, MetaV1Condition } from "../../src/api/capi.ts";
import { API_VERSION, CAPI_API_VERSION, TEMPLATE_KIND, TEMPLATE_PLURAL } from "../../src/api/constants.ts";
import type { QuorumControlPlaneTemplate } from "../../src/api/types.ts";
import { kubeRequest, kubeRequestOk } from "../../test/env/index.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import { BOOTSTRAP_API_VERSION, INFRA_API_VERSION, RESOURCE } from "../provider/crds.ts";
import { createControlPlaneTemplates } from "./stack.ts";

/** A Cluster as the topology controller reads it: Quorum's Cluster type plus spec.topology. */
export interface TopologyCluster extends Cluster {
  spec?: Cluster["spec"] & {
    topology?: {
      classRef: { name: string };
      version: string;
      controlPlane?: { replicas?: number; metadata?: { labels?: Record<string, string> } };
    };
  };
}

export interface ClusterClassSpec {
  namespace: string;
  /** The ClusterClass; its templates are named after it. */
  name: string;
  /** spec.controlPlane.metadata.labels: CAPI puts them on the control plane and its Machines. */
  controlPlaneLabels?: Record<string, string>;
}

/**
 * The namespace, the templates (ProcessClusterTemplate, ProcessMachineTemplate, ProcessBootstrapConfigTemplate,
 * QuorumControlPlaneTemplate) and the ClusterClass tying them together; waits until CAPI's ClusterClass controller
 * has reconciled it (the topology controller refuses a Cluster until then).
 */
export async function createClusterClass(kc: KubeConfig, spec: ClusterClassSpec): Promise<void> {
  const { namespace, name } = spec;
  await kubeRequest(kc, "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
  });
  const create = (path: string, body: unknown) => kubeRequestOk(kc, path, { body });
  await create(`/apis/${INFRA_API_VERSION}/namespaces/${namespace}/${RESOURCE.ProcessClusterTemplate}`, {
    apiVersion: INFRA_API_VERSION,
    kind: "ProcessClusterTemplate",
    metadata: { name, namespace },
    spec: { template: { spec: {} } },
  });
  await createControlPlaneTemplates(kc, namespace, name);
  // Without infrastructureRef: the topology controller writes it (its per-cluster copy of machineInfrastructure).
  const controlPlaneTemplate: QuorumControlPlaneTemplate = {
    apiVersion: API_VERSION,
    kind: TEMPLATE_KIND,
    metadata: { name, namespace },
    spec: {
      template: {
        spec: {
          machineTemplate: {
            spec: {
              bootstrapConfigTemplateRef: {
                apiGroup: BOOTSTRAP_API_VERSION.split("/")[0],
                kind: "ProcessBootstrapConfigTemplate",
                name: `${name}-control-plane`,
              },
            },
          },
          rollout: { strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } } },
        },
      },
    },
  };
  await create(`/apis/${API_VERSION}/namespaces/${namespace}/${TEMPLATE_PLURAL}`, controlPlaneTemplate);
  await create(`/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusterclasses`, {
    apiVersion: CAPI_API_VERSION,
    kind: "ClusterClass",
    metadata: { name, namespace },
    spec: {
      infrastructure: { templateRef: { apiVersion: INFRA_API_VERSION, kind: "ProcessClusterTemplate", name } },
      controlPlane: {
        templateRef: { apiVersion: API_VERSION, kind: TEMPLATE_KIND, name },
        machineInfrastructure: {
          templateRef: { apiVersion: INFRA_API_VERSION, kind: "ProcessMachineTemplate", name: `${name}-control-plane` },
        },
        ...(spec.controlPlaneLabels ? { metadata: { labels: spec.controlPlaneLabels } } : {}),
      },
    },
  });
  await waitClusterClassReconciled(kc, namespace, name, 60_000);
}

interface ClusterClassObject {
  metadata: { generation?: number };
  status?: { observedGeneration?: number; conditions?: MetaV1Condition[] };
}

/** CAPI's ClusterClass controller has seen this generation and found its variables (and references) valid. */
export async function waitClusterClassReconciled(
  kc: KubeConfig,
  namespace: string,
  name: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "not read yet";
  while (Date.now() < deadline) {
    const clusterClass = await kubeRequestOk<ClusterClassObject>(
      kc,
      `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusterclasses/${name}`,
    );
    const conditions = clusterClass.status?.conditions ?? [];
    const variablesReady = conditions.find((condition) => condition.type === "VariablesReady");
    if (
      clusterClass.status?.observedGeneration === clusterClass.metadata.generation &&
      variablesReady?.status === "True"
    )
      return;
    last = conditions.map((condition) => `${condition.type}=${condition.status} ${condition.message ?? ""}`).join("; ");
    await sleep(250);
  }
  throw new Error(`ClusterClass ${namespace}/${name} was not reconciled within ${timeoutMs / 1000} s: ${last}`);
}

/**
 * A Cluster with spec.topology in the ClusterClass's namespace: CAPI creates its ProcessCluster and
 * QuorumControlPlane from the ClusterClass.
 */
export async function createTopologyCluster(
  kc: KubeConfig,
  spec: { namespace: string; name: string; clusterClass: string; version: string; replicas: number },
): Promise<void> {
  const { namespace, name } = spec;
  await kubeRequestOk(kc, `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters`, {
    body: {
      apiVersion: CAPI_API_VERSION,
      kind: "Cluster",
      metadata: { name, namespace },
      spec: {
        clusterNetwork: { pods: { cidrBlocks: ["10.244.0.0/16"] }, services: { cidrBlocks: ["10.96.0.0/12"] } },
        topology: {
          classRef: { name: spec.clusterClass },
          version: spec.version,
          controlPlane: { replicas: spec.replicas },
        },
      },
    },
  });
}

export async function readCluster(kc: KubeConfig, namespace: string, name: string): Promise<TopologyCluster> {
  return kubeRequestOk<TopologyCluster>(kc, `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters/${name}`);
}

/** The control plane's name once the Cluster references one (at once for a hand-made Cluster; CAPI names a topology's). */
export async function waitControlPlaneName(
  kc: KubeConfig,
  namespace: string,
  cluster: string,
  timeoutMs: number,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last: TopologyCluster | undefined;
  while (Date.now() < deadline) {
    last = await readCluster(kc, namespace, cluster);
    const name = last.spec?.controlPlaneRef?.name;
    if (name) return name;
    await sleep(250);
  }
  const conditions = (last?.status?.conditions ?? []).map(
    (condition) => `${condition.type}=${condition.status} ${condition.reason}: ${condition.message ?? ""}`,
  );
  throw new Error(
    `Cluster ${namespace}/${cluster} got no spec.controlPlaneRef within ${timeoutMs / 1000} s (conditions: ${conditions.join("; ") || "none"}): is the CAPI core manager running with --feature-gates=ClusterTopology=true?`,
  );
}

export async function patchClusterTopology(
  kc: KubeConfig,
  namespace: string,
  name: string,
  topology: Record<string, unknown>,
): Promise<void> {
  await kubeRequestOk(kc, `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusters/${name}`, {
    method: "PATCH",
    body: { spec: { topology } },
  });
}

export async function patchClusterClassControlPlaneLabels(
  kc: KubeConfig,
  namespace: string,
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  await kubeRequestOk(kc, `/apis/${CAPI_API_VERSION}/namespaces/${namespace}/clusterclasses/${name}`, {
    method: "PATCH",
    body: { spec: { controlPlane: { metadata: { labels } } } },
  });
}
