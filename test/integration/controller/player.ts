// MachinePlayer: plays CAPI's Machine controller and an infrastructure provider for the controller integration
// tests, with a real etcd member per Machine. It does what they do that Quorum depends on, and nothing more:
//  - keeps a finalizer on each Machine, like CAPI's Machine controller;
//  - "provisions" a new Machine: the first one starts a new etcd cluster, later ones add themselves as a learner
//    and start with --initial-cluster-state existing (kubeadm join), then it reports the Machine's address;
//  - on deletion waits until every pre-terminate hook is gone (as CAPI does), then kills the member's process
//    without touching membership (that is Quorum's job) and lets the Machine go.
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Machine } from "../../../src/api/capi.ts";
import { API_VERSION, CAPI_API_VERSION, LABEL_CLUSTER_NAME, secretName } from "../../../src/api/constants.ts";
import { loadCA } from "../../../src/adapters/certs/pki.ts";
import { startEtcdCluster, type EtcdCluster, type EtcdMember } from "../../env/etcd.ts";
import { kubeRequest, kubeRequestOk } from "../../env/kube.ts";

const PLAYER_FINALIZER = "machine.cluster.x-k8s.io";
const HOOK_PREFIX = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/";

export interface PlayerEvent {
  at: number;
  kind: "provisioned" | "infrastructure-deleted" | "error";
  machine: string;
  detail?: string;
}

export class MachinePlayer {
  etcd: EtcdCluster | undefined;
  readonly members = new Map<string, EtcdMember>();
  readonly events: PlayerEvent[] = [];
  /** Machines whose infrastructure is gone while their member was still in the membership (must stay empty). */
  readonly deletedWithMember: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private controlPlaneInitialized = false;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly namespace: string,
    private readonly clusterName: string,
  ) {}

  start(intervalMs = 150): void {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.step()
        .catch((error: unknown) => {
          this.events.push({ at: Date.now(), kind: "error", machine: "", detail: String(error) });
        })
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, intervalMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.etcd?.stop();
  }

  /** Client URLs of the members whose Machine still runs. */
  liveEndpoints(): string[] {
    return [...this.members.values()].filter((member) => member.isRunning()).map((member) => member.clientURL);
  }

  private machinesPath(name?: string): string {
    return `/apis/${CAPI_API_VERSION}/namespaces/${this.namespace}/machines${name ? `/${name}` : ""}`;
  }

  private async step(): Promise<void> {
    await this.mirrorControlPlaneInitialized();
    const list = await kubeRequestOk<{ items: Machine[] }>(
      this.kubeConfig,
      `${this.machinesPath()}?labelSelector=${encodeURIComponent(`${LABEL_CLUSTER_NAME}=${this.clusterName}`)}`,
    );
    for (const machine of list.items) {
      const name = machine.metadata.name;
      const finalizers = machine.metadata.finalizers ?? [];
      if (machine.metadata.deletionTimestamp) {
        const hooks = Object.keys(machine.metadata.annotations ?? {}).filter((key) => key.startsWith(HOOK_PREFIX));
        if (hooks.length > 0) continue;
        await this.deleteInfrastructure(name);
        await kubeRequest(this.kubeConfig, this.machinesPath(name), {
          method: "PATCH",
          body: {
            metadata: {
              finalizers: finalizers.filter((f) => f !== PLAYER_FINALIZER),
              resourceVersion: machine.metadata.resourceVersion,
            },
          },
        });
        continue;
      }
      if (!finalizers.includes(PLAYER_FINALIZER)) {
        await kubeRequestOk(this.kubeConfig, this.machinesPath(name), {
          method: "PATCH",
          body: {
            metadata: {
              finalizers: [...finalizers, PLAYER_FINALIZER],
              resourceVersion: machine.metadata.resourceVersion,
            },
          },
        });
        continue;
      }
      if ((machine.status?.addresses ?? []).length === 0) await this.provision(machine);
    }
  }

  /** CAPI's Cluster controller copies the control plane's initialization into the Cluster's status. */
  private async mirrorControlPlaneInitialized(): Promise<void> {
    const qcp = await kubeRequest<{ status?: { initialization?: { controlPlaneInitialized?: boolean } } }>(
      this.kubeConfig,
      `/apis/${API_VERSION}/namespaces/${this.namespace}/quorumcontrolplanes/${this.clusterName}`,
    );
    if (qcp.status !== 200 || !qcp.body.status?.initialization?.controlPlaneInitialized || this.controlPlaneInitialized)
      return;
    await kubeRequestOk(
      this.kubeConfig,
      `/apis/${CAPI_API_VERSION}/namespaces/${this.namespace}/clusters/${this.clusterName}/status`,
      {
        method: "PATCH",
        body: { status: { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } } },
      },
    );
    this.controlPlaneInitialized = true;
  }

  private async provision(machine: Machine): Promise<void> {
    const name = machine.metadata.name;
    let member = this.members.get(name);
    if (!member) {
      if (!this.etcd) {
        const secret = await kubeRequestOk<{ data: Record<string, string> }>(
          this.kubeConfig,
          `/api/v1/namespaces/${this.namespace}/secrets/${secretName.etcd(this.clusterName)}`,
        );
        const decode = (key: string) => Buffer.from(secret.data[key], "base64").toString("utf8");
        const ca = await loadCA(decode("tls.crt"), decode("tls.key"));
        this.etcd = await startEtcdCluster({ members: 1, ca, capacity: 16, namePrefix: `${this.clusterName}-first-` });
        member = this.etcd.members[0];
      } else {
        member = await this.etcd.addMember({ name, learner: true });
        await member.start({ learner: true });
      }
      this.members.set(name, member);
    }
    await kubeRequestOk(this.kubeConfig, `${this.machinesPath(name)}/status`, {
      method: "PATCH",
      body: {
        status: {
          addresses: [{ type: "InternalIP", address: member.address }],
          initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true },
        },
      },
    });
    this.events.push({ at: Date.now(), kind: "provisioned", machine: name, detail: member.address });
  }

  private async deleteInfrastructure(name: string): Promise<void> {
    const member = this.members.get(name);
    if (member && this.etcd) {
      // CAPI does not ask etcd; the player does only to record a member left behind. A frozen etcd would hold the
      // deletion up for the client's retries (tens of seconds per Machine), so it is asked for 2 s at most and an
      // etcd that does not answer records nothing.
      const listed = await Promise.race([this.etcd.memberList().catch(() => []), sleep(2_000).then(() => [])]);
      const stillMember = listed.some((entry) => entry.peerURLs.includes(member.peerURL));
      if (stillMember) this.deletedWithMember.push(name);
      await member.kill();
    }
    // Quorum may reuse the name for a later Machine; that one is a new machine with a new member.
    this.members.delete(name);
    this.events.push({ at: Date.now(), kind: "infrastructure-deleted", machine: name });
  }
}
