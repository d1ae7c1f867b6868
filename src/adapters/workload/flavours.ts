// The bootstrap flavours' workload-cluster side, one entry per Flavour (src/api/flavour.ts): the steps a flavour
// needs in the workload cluster around a new Machine, and whether its Machines run their own API server (which Quorum
// then dials for readiness and certificate expiry). ClusterWorkloadAccess and the simulator's ports both go through
// WorkloadFlavours, so adding a flavour means a Flavour value, its flavourOf rule and an entry here; the planner's
// step list, the executor and the status code read only what the ports return.
import type { Cluster } from "../../api/capi.ts";
import { flavourOf, type Flavour } from "../../api/flavour.ts";
import type { QuorumControlPlane } from "../../api/types.ts";
import type { TemplateReader, WorkloadSteps } from "../../ports/workload.ts";
import type { WorkloadCaller } from "./client.ts";
import { KubeadmFlavour } from "./kubeadm/flavour.ts";

/** A flavour's workload-cluster steps (KubeadmFlavour is one). */
export interface FlavourSteps {
  /** What the planner is shown: the steps, whether the control plane is initialised, the components. */
  observeAll(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    call: WorkloadCaller,
    template: TemplateReader,
  ): Promise<WorkloadSteps>;
  /** Carries out one step observeAll reported; returns what was done. */
  prepare(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    step: string,
    call: WorkloadCaller,
    template: TemplateReader,
  ): Promise<string>;
  /** Drops what is kept for a cluster that is gone. */
  forget(namespace: string, clusterName: string): void;
}

export interface WorkloadFlavour {
  /** Whether each Machine runs its own kube-apiserver, at the port the bootstrap template gives. */
  readonly machinesServeApi: boolean;
  /** Absent when the flavour needs nothing in the workload cluster. */
  readonly steps?: FlavourSteps;
}

export class WorkloadFlavours {
  private readonly flavours: Record<Flavour, WorkloadFlavour>;

  /**
   * `passThrough`: errors workloadSteps must not turn into the port's `error` (the simulator's crash and violation
   * signals, which stand for the process dying; a real process has none).
   */
  constructor(
    clock: () => number,
    private readonly passThrough: (error: unknown) => boolean = () => false,
  ) {
    this.flavours = {
      kubeadm: { machinesServeApi: true, steps: new KubeadmFlavour(clock) },
      // Quorum's own process bootstrap, or any provider it does not know.
      generic: { machinesServeApi: false },
    };
  }

  of(controlPlane: QuorumControlPlane): WorkloadFlavour {
    return this.flavours[flavourOf(controlPlane)];
  }

  /**
   * WorkloadAccess.workloadSteps: the flavour's observation, a failure reported as the port's `error` (the planner
   * then holds what needs the steps). `caller` is asked only when the flavour has steps.
   */
  async workloadSteps(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    caller: () => WorkloadCaller,
    template: TemplateReader,
  ): Promise<WorkloadSteps> {
    const flavour = flavourOf(controlPlane);
    const steps = this.flavours[flavour].steps;
    if (!steps) return { steps: [] };
    try {
      return await steps.observeAll(controlPlane, cluster, caller(), template);
    } catch (error) {
      if (this.passThrough(error)) throw error;
      return { flavour, steps: [], error: error instanceof Error ? error.message : String(error) };
    }
  }

  /** WorkloadAccess.prepareWorkload. */
  prepare(
    controlPlane: QuorumControlPlane,
    cluster: Cluster,
    step: string,
    caller: () => WorkloadCaller,
    template: TemplateReader,
  ): Promise<string> {
    const steps = this.of(controlPlane).steps;
    if (!steps)
      return Promise.reject(
        new Error(`the bootstrap provider of ${controlPlane.metadata.name} needs no workload step ${step}`),
      );
    return steps.prepare(controlPlane, cluster, step, caller(), template);
  }

  forget(namespace: string, clusterName: string): void {
    for (const flavour of Object.values(this.flavours)) flavour.steps?.forget(namespace, clusterName);
  }
}
