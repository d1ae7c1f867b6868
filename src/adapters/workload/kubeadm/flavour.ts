// The kubeadm flavour's workload-cluster steps: what KCP does in the workload cluster so that a rollout upgrades a
// kubeadm control plane for real (issue 17). In order:
//   kubeadm-permissions (before a Machine is created): the RBAC newer kubeadm expects (permissions.ts);
//   kubeadm-config      (before a Machine is created): the ClusterConfiguration joiners render their static pods
//                       from says spec.version and the template's clusterConfiguration (cluster-configuration.ts);
//   kube-proxy          (once every Machine is up to date): kube-proxy's image follows spec.version, never ahead of
//                       an API server (the version skew policy), unless the control plane carries KCP's
//                       skip-kube-proxy annotation;
//   coredns             (then, as KCP): CoreDNS's image follows the template's dns.imageTag/dns.imageRepository (or
//                       imageRepository) where it pins them, unless the control plane carries KCP's skip-coredns
//                       annotation; the Corefile is left as is (coredns.ts).
// Observing reads the workload API; a step seen done for the same version and template is not read again for
// DONE_RECHECK_MS (an idle cluster costs no workload read), and any step Quorum carries out re-reads first.
import type { V1Pod } from "@kubernetes/client-node";
import type { Cluster } from "../../../api/capi.ts";
import type { QuorumControlPlane } from "../../../api/types.ts";
import type { ControlPlaneComponent, TemplateReader, WorkloadStep, WorkloadSteps } from "../../../ports/workload.ts";
import type { WorkloadCaller } from "../client.ts";

export type { WorkloadCaller } from "../client.ts";
import {
  CLUSTER_CONFIGURATION_KEY,
  ClusterConfigurationError,
  syncClusterConfiguration,
} from "./cluster-configuration.ts";
import { KUBEADM_CONFIG_WHERE, readKubeadmConfig, writeClusterConfiguration } from "./kubeadm-config-map.ts";
import { coreDNS, SKIP_COREDNS_ANNOTATION } from "./coredns.ts";
import { retagImage } from "./images.ts";
import { moveImage } from "./move-image.ts";
import { kubeadmBindings } from "./permissions.ts";

export const KUBE_PROXY = { namespace: "kube-system", name: "kube-proxy" } as const;
/** KCP's annotation: the control plane leaves kube-proxy's image alone (a user runs another proxy, or none). */
export const SKIP_KUBE_PROXY_ANNOTATION = "controlplane.cluster.x-k8s.io/skip-kube-proxy";
/** A step seen done is trusted this long for the same inputs (the templates are re-read as often). */
export const DONE_RECHECK_MS = 10 * 60_000;

/** The static pods kubeadm runs on every stacked control-plane node, labelled `tier: control-plane` and `component`. */
export const KUBEADM_COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/**
 * kubeadm-config first: while init has not uploaded it, nothing else is written to a control plane still forming.
 * kube-proxy before coredns, in KCP's order.
 */
export const KUBEADM_STEPS = ["kubeadm-config", "kubeadm-permissions", "kube-proxy", "coredns"] as const;
export type KubeadmStep = (typeof KUBEADM_STEPS)[number];

export interface StepState {
  step: WorkloadStep;
  /** The object the step is about does not exist (kubeadm-config: init has not uploaded it). */
  absent?: boolean;
  /** Apply the step; returns what changed. */
  apply?: () => Promise<string>;
}

export class KubeadmFlavour {
  /** Per namespace/cluster and step: the inputs it was last seen done for, and when. */
  private readonly done = new Map<string, { inputs: string; at: number }>();

  constructor(private readonly clock: () => number) {}

  /**
   * Everything the kubeadm flavour shows the planner (WorkloadAccess.workloadSteps without its error handling): the
   * steps, whether kubeadm init uploaded kubeadm-config, and every node's control-plane components.
   */
  async observeAll(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    call: WorkloadCaller,
    template: TemplateReader,
  ): Promise<WorkloadSteps> {
    const [{ steps, initialized }, components] = await Promise.all([
      this.steps(controlPlane, cluster, call, template),
      this.components(call),
    ]);
    return { flavour: "kubeadm", steps, components, componentNames: [...KUBEADM_COMPONENTS], initialized };
  }

  async steps(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    call: WorkloadCaller,
    template: TemplateReader,
  ): Promise<{ steps: WorkloadStep[]; initialized: boolean }> {
    const result: WorkloadStep[] = [];
    let initialized = true;
    for (const name of KUBEADM_STEPS) {
      const inputs = inputsOf(controlPlane, name);
      const key = doneKey(controlPlane, cluster, name);
      const seen = this.done.get(key);
      if (seen && seen.inputs === inputs && this.clock() - seen.at < DONE_RECHECK_MS) {
        result.push({ name, when: whenOf(name), done: true, detail: "" });
        continue;
      }
      const { step, absent } = await this.observe(name, controlPlane, call, template);
      // An absent object is not trusted for long: kube-proxy's DaemonSet and CoreDNS's Deployment appear when kubeadm
      // init gets to its addons.
      if (step.done && !absent) this.done.set(key, { inputs, at: this.clock() });
      else this.done.delete(key);
      if (name === "kubeadm-config" && absent) initialized = false;
      result.push(step);
    }
    return { steps: result, initialized };
  }

  async prepare(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    name: string,
    call: WorkloadCaller,
    template: TemplateReader,
  ): Promise<string> {
    if (!isKubeadmStep(name)) throw new Error(`the kubeadm flavour has no workload step ${name}`);
    const key = doneKey(controlPlane, cluster, name);
    this.done.delete(key);
    const { step, apply } = await this.observe(name, controlPlane, call, template);
    if (step.blocked) throw new Error(step.blocked);
    const message = step.done || !apply ? `${name}: already done` : await apply();
    this.done.set(key, { inputs: inputsOf(controlPlane, name), at: this.clock() });
    return message;
  }

  /**
   * Every node's control-plane components, from the mirror Pods the kubelet keeps for kubeadm's static pods (one
   * list of kube-system, `tier=control-plane`), as KCP's control-plane health check reads them.
   */
  async components(call: WorkloadCaller): Promise<ControlPlaneComponent[]> {
    const pods = await call("list the control-plane Pods in kube-system", (apis, options) =>
      apis.core.listNamespacedPod({ namespace: "kube-system", labelSelector: "tier=control-plane" }, options),
    );
    const result: ControlPlaneComponent[] = [];
    for (const pod of pods.items) {
      const component = pod.metadata?.labels?.component;
      const node = pod.spec?.nodeName;
      if (!component || !node || !(KUBEADM_COMPONENTS as readonly string[]).includes(component)) continue;
      const image = pod.spec?.containers[0]?.image;
      result.push({ node, component, ...(image ? { image } : {}), ...podReadiness(pod) });
    }
    return result;
  }

  forget(namespace: string, clusterName: string): void {
    for (const key of [...this.done.keys()]) if (key.startsWith(`${namespace}/${clusterName}/`)) this.done.delete(key);
  }

  private observe(
    name: KubeadmStep,
    controlPlane: QuorumControlPlane,
    call: WorkloadCaller,
    template: TemplateReader,
  ): Promise<StepState> {
    switch (name) {
      case "kubeadm-permissions":
        return permissions(controlPlane, call);
      case "kubeadm-config":
        return kubeadmConfig(controlPlane, call, template);
      case "kube-proxy":
        return kubeProxy(controlPlane, call, template);
      case "coredns":
        return coreDNS(controlPlane, call, () => templateClusterConfiguration(template));
    }
  }
}

export function isKubeadmStep(name: string): name is KubeadmStep {
  return (KUBEADM_STEPS as readonly string[]).includes(name);
}

function whenOf(name: KubeadmStep): WorkloadStep["when"] {
  return name === "kube-proxy" || name === "coredns" ? "AfterRollout" : "BeforeCreate";
}

function doneKey(controlPlane: QuorumControlPlane, cluster: Cluster, name: string): string {
  return `${controlPlane.metadata.namespace ?? "default"}/${cluster.metadata.name}/${name}`;
}

/** What a step's result depends on in the spec: a new version, template or annotation is looked at again. */
function inputsOf(controlPlane: QuorumControlPlane, name: KubeadmStep): string {
  const ref = controlPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef;
  const skipAnnotation =
    name === "kube-proxy" ? SKIP_KUBE_PROXY_ANNOTATION : name === "coredns" ? SKIP_COREDNS_ANNOTATION : undefined;
  const skip = skipAnnotation !== undefined && controlPlane.metadata.annotations?.[skipAnnotation] !== undefined;
  return JSON.stringify([controlPlane.spec.version, ref.name, skip]);
}

async function permissions(controlPlane: QuorumControlPlane, call: WorkloadCaller): Promise<StepState> {
  const wanted = kubeadmBindings(controlPlane.spec.version);
  const missing: typeof wanted = [];
  for (const binding of wanted) {
    const name = binding.metadata?.name ?? "";
    const found = await call(
      `read ClusterRoleBinding ${name}`,
      (apis, options) => apis.rbac.readClusterRoleBinding({ name }, options),
      true,
    );
    if (!found) missing.push(binding);
  }
  const names = missing.map((binding) => binding.metadata?.name ?? "").join(", ");
  return {
    step: {
      name: "kubeadm-permissions",
      when: "BeforeCreate",
      done: missing.length === 0,
      detail:
        missing.length === 0
          ? ""
          : `kubeadm ${controlPlane.spec.version} expects ClusterRoleBinding ${names}, which the kubeadm that initialised the cluster did not create`,
    },
    apply: async () => {
      for (const binding of missing) {
        const name = binding.metadata?.name ?? "";
        // Created only when absent: a binding a user changed is theirs.
        await call(`create ClusterRoleBinding ${name}`, async (apis, options) => {
          try {
            return await apis.rbac.createClusterRoleBinding({ body: binding }, options);
          } catch (error) {
            if ((error as { code?: unknown }).code === 409) return binding;
            throw error;
          }
        });
      }
      return `created ClusterRoleBinding ${names} in the workload cluster (kubeadm ${controlPlane.spec.version} expects them)`;
    },
  };
}

async function kubeadmConfig(
  controlPlane: QuorumControlPlane,
  call: WorkloadCaller,
  template: TemplateReader,
): Promise<StepState> {
  const where = KUBEADM_CONFIG_WHERE;
  const step = (done: boolean, detail: string, blocked?: string): WorkloadStep => ({
    name: "kubeadm-config",
    when: "BeforeCreate",
    done,
    detail,
    ...(blocked ? { blocked } : {}),
  });
  const configMap = await readKubeadmConfig(call);
  const current = configMap?.data?.[CLUSTER_CONFIGURATION_KEY];
  if (!configMap || current === undefined) {
    const missing = configMap ? `${where} has no ${CLUSTER_CONFIGURATION_KEY}` : `${where} does not exist`;
    return {
      absent: true,
      step: step(
        false,
        missing,
        `${missing}: kubeadm init uploads it once the first control-plane node is up, and every kubeadm join reads it; a Machine created before it exists could not join (if init failed, see the first Machine's cloud-init output)`,
      ),
    };
  }
  const clusterConfiguration = await templateClusterConfiguration(template);
  let sync;
  try {
    sync = syncClusterConfiguration(current, clusterConfiguration, versionTag(controlPlane.spec.version), where);
  } catch (error) {
    if (error instanceof ClusterConfigurationError) return { step: step(false, error.message, error.message) };
    throw error;
  }
  const desired = sync.yaml;
  if (desired === undefined) return { step: step(true, "") };
  const changes = sync.changes.join("; ");
  return {
    step: step(false, `${where} differs from what joining Machines need: ${changes}`),
    apply: async () => {
      await writeClusterConfiguration(call, configMap, desired);
      return `updated ${where} for joining Machines: ${changes}`;
    },
  };
}

async function kubeProxy(
  controlPlane: QuorumControlPlane,
  call: WorkloadCaller,
  template: TemplateReader,
): Promise<StepState> {
  const done: StepState = { step: { name: "kube-proxy", when: "AfterRollout", done: true, detail: "" } };
  if (controlPlane.metadata.annotations?.[SKIP_KUBE_PROXY_ANNOTATION] !== undefined) return done;
  const where = `DaemonSet ${KUBE_PROXY.namespace}/${KUBE_PROXY.name} of the workload cluster`;
  const daemonSet = await call(
    `read ${where}`,
    (apis, options) => apis.apps.readNamespacedDaemonSet(KUBE_PROXY, options),
    true,
  );
  // No kube-proxy (skipped at init, or another proxy replaces it): nothing to move.
  const container = daemonSet?.spec?.template.spec?.containers.find((candidate) => candidate.name === "kube-proxy");
  if (!daemonSet) return { ...done, absent: true };
  if (!container?.image) return done;
  const repository = stringField(await templateClusterConfiguration(template), "imageRepository");
  const image = retagImage(container.image, versionTag(controlPlane.spec.version), repository);
  if (image === container.image) return done;
  const from = container.image;
  return {
    step: { name: "kube-proxy", when: "AfterRollout", done: false, detail: `${where} runs ${from}, not ${image}` },
    apply: async () => {
      const move = { ...KUBE_PROXY, kind: "DaemonSet", container: "kube-proxy", image } as const;
      await moveImage(call, { ...move, resourceVersion: daemonSet.metadata?.resourceVersion }, `update ${where}`);
      return `moved ${where} from ${from} to ${image}`;
    },
  };
}

/** Ready as the kubelet reports it, and when not, the container's waiting or last-terminated reason. */
function podReadiness(pod: V1Pod): { ready: boolean; detail: string } {
  const where = `pod ${pod.metadata?.namespace ?? "kube-system"}/${pod.metadata?.name ?? ""}`;
  const ready = pod.status?.conditions?.some((condition) => condition.type === "Ready" && condition.status === "True");
  if (ready) return { ready: true, detail: where };
  const container = pod.status?.containerStatuses?.[0];
  const waiting = container?.state?.waiting;
  const terminated = container?.lastState?.terminated;
  const why = [
    waiting?.reason,
    waiting?.message,
    terminated ? `last exit ${terminated.exitCode}${terminated.reason ? ` (${terminated.reason})` : ""}` : undefined,
    container?.restartCount ? `${container.restartCount} restarts` : undefined,
  ].filter((part): part is string => Boolean(part));
  return { ready: false, detail: `${where} is not Ready${why.length > 0 ? `: ${why.join(", ")}` : ""}` };
}

/** spec.template.spec.clusterConfiguration of the KubeadmConfigTemplate, or undefined when it sets none. */
async function templateClusterConfiguration(template: TemplateReader): Promise<unknown> {
  const object = (await template()) as { spec?: { template?: { spec?: { clusterConfiguration?: unknown } } } };
  return object.spec?.template?.spec?.clusterConfiguration;
}

function stringField(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === "string" && field !== "" ? field : undefined;
}

/** kubeadm and image tags spell versions with a leading "v". */
function versionTag(version: string): string {
  return version.startsWith("v") ? version : `v${version}`;
}
