// MachinePlayer: gives each control-plane Machine of one cluster a real etcd member, for the controller integration
// tests. The first Machine starts a new etcd cluster; later ones add themselves as a learner and start with
// --initial-cluster-state existing (kubeadm join). It kills a Machine's member process when its infrastructure goes,
// without touching membership (that is Quorum's job). Two modes:
//  - "infrastructure" (with the real CAPI core manager): it is the infrastructure and bootstrap provider of the
//    test kinds, by their v1beta2 contract. It provisions a TestMachine (spec.providerID, status.addresses,
//    status.initialization.provisioned) and marks a TestBootstrapConfig's data Secret created; CAPI's Machine
//    controller copies both onto the Machine, waits for pre-terminate hooks on deletion and deletes the TestMachine,
//    whose finalizer the player holds until it has killed the member.
//  - "machine-controller" (no CAPI): it also plays what CAPI's Machine and Cluster controllers do that Quorum
//    depends on: a finalizer on each Machine, the Machine's addresses and initialization, waiting for pre-terminate
//    hooks, and the Cluster's controlPlaneInitialized.
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Machine } from "../../../src/api/capi.ts";
import { API_VERSION, CAPI_API_VERSION, LABEL_CLUSTER_NAME, secretName } from "../../../src/api/constants.ts";
import { loadCA } from "../../../src/adapters/certs/pki.ts";
import { startEtcdCluster, type EtcdCluster, type EtcdMember } from "../../env/etcd.ts";
import { kubeRequest, kubeRequestOk } from "../../env/kube.ts";
import { INFRA_GROUP, TEST_VERSION } from "./test-kinds.ts";

interface TestMachine {
  metadata: { name: string; finalizers?: string[]; deletionTimestamp?: string; resourceVersion?: string };
  status?: { initialization?: { provisioned?: boolean } };
}

const PLAYER_FINALIZER = "machine.cluster.x-k8s.io";
/** The infrastructure provider's finalizer on a TestMachine: the member is killed before the TestMachine goes. */
const INFRA_FINALIZER = "testmachine.infrastructure.cluster.x-k8s.io";
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
    readonly mode: "infrastructure" | "machine-controller" = "machine-controller",
    /**
     * Infrastructure mode: provision a TestMachine only once its Machine has bootstrap data (spec.bootstrap.dataSecretName),
     * as CAPD and the cloud providers do. With a real bootstrap provider this keeps the order it relies on: the first
     * Machine's data is written (kubeadm init) before its member exists and the control plane counts as initialised.
     */
    private readonly options: { waitForBootstrapData?: boolean } = {},
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

  /**
   * Sets an object's finalizers at the resourceVersion it was read at. A removal may fail harmlessly (the object is
   * gone, or changed: the next pass looks again); an addition must succeed before the player goes on.
   */
  private async setFinalizers(
    path: string,
    finalizers: string[],
    resourceVersion: string | undefined,
    { mustSucceed }: { mustSucceed: boolean },
  ): Promise<void> {
    const request = { method: "PATCH", body: { metadata: { finalizers, resourceVersion } } } as const;
    if (mustSucceed) await kubeRequestOk(this.kubeConfig, path, request);
    else await kubeRequest(this.kubeConfig, path, request);
  }

  /** Client URLs of the members whose Machine still runs. */
  liveEndpoints(): string[] {
    return [...this.members.values()].filter((member) => member.isRunning()).map((member) => member.clientURL);
  }

  private machinesPath(name?: string): string {
    return `/apis/${CAPI_API_VERSION}/namespaces/${this.namespace}/machines${name ? `/${name}` : ""}`;
  }

  private async step(): Promise<void> {
    if (this.mode === "infrastructure") return this.infrastructureStep();
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
        await this.setFinalizers(
          this.machinesPath(name),
          finalizers.filter((f) => f !== PLAYER_FINALIZER),
          machine.metadata.resourceVersion,
          { mustSucceed: false },
        );
        continue;
      }
      if (!finalizers.includes(PLAYER_FINALIZER)) {
        await this.setFinalizers(
          this.machinesPath(name),
          [...finalizers, PLAYER_FINALIZER],
          machine.metadata.resourceVersion,
          { mustSucceed: true },
        );
        continue;
      }
      if ((machine.status?.addresses ?? []).length === 0) await this.provision(machine);
    }
  }

  private testKindPath(ref: { apiGroup: string; kind: string; name?: string }): string {
    const plural = `${ref.kind.toLowerCase()}s`;
    return `/apis/${ref.apiGroup}/${TEST_VERSION}/namespaces/${this.namespace}/${plural}${ref.name ? `/${ref.name}` : ""}`;
  }

  /** One pass as the infrastructure and bootstrap provider, beside CAPI's own Machine controller. */
  private async infrastructureStep(): Promise<void> {
    const list = await kubeRequestOk<{ items: Machine[] }>(
      this.kubeConfig,
      `${this.machinesPath()}?labelSelector=${encodeURIComponent(`${LABEL_CLUSTER_NAME}=${this.clusterName}`)}`,
    );
    for (const machine of list.items) {
      const bootstrap = machine.spec.bootstrap.configRef;
      // The player is the bootstrap provider of the test kind only; another kind has its own (e.g. CABPK).
      if (bootstrap?.kind === "TestBootstrapConfig" && !machine.metadata.deletionTimestamp)
        await this.bootstrapDataCreated(machine.metadata.name, bootstrap);
    }
    // Quorum labels what it clones for a Machine with the cluster's name: each player handles its own cluster's.
    const infra = await kubeRequestOk<{ items: TestMachine[] }>(
      this.kubeConfig,
      `${this.testKindPath({ apiGroup: INFRA_GROUP, kind: "TestMachine" })}?labelSelector=${encodeURIComponent(`${LABEL_CLUSTER_NAME}=${this.clusterName}`)}`,
    );
    const machineByInfra = new Map(list.items.map((machine) => [machine.spec.infrastructureRef.name, machine]));
    for (const testMachine of infra.items) {
      const path = this.testKindPath({ apiGroup: INFRA_GROUP, kind: "TestMachine", name: testMachine.metadata.name });
      const finalizers = testMachine.metadata.finalizers ?? [];
      if (testMachine.metadata.deletionTimestamp) {
        if (!finalizers.includes(INFRA_FINALIZER)) continue;
        await this.deleteInfrastructure(testMachine.metadata.name);
        await this.setFinalizers(
          path,
          finalizers.filter((f) => f !== INFRA_FINALIZER),
          testMachine.metadata.resourceVersion,
          { mustSucceed: false },
        );
        continue;
      }
      // Only TestMachines of a live Machine get a member (CAPI makes the Machine their owner).
      const machine = machineByInfra.get(testMachine.metadata.name);
      if (!machine) continue;
      if (this.options.waitForBootstrapData && !machine.spec.bootstrap.dataSecretName) continue;
      if (!finalizers.includes(INFRA_FINALIZER)) {
        await this.setFinalizers(path, [...finalizers, INFRA_FINALIZER], testMachine.metadata.resourceVersion, {
          mustSucceed: true,
        });
        continue;
      }
      if (testMachine.status?.initialization?.provisioned) continue;
      const member = await this.startMember(testMachine.metadata.name);
      await kubeRequestOk(this.kubeConfig, path, {
        method: "PATCH",
        body: { spec: { providerID: `test:///${this.namespace}/${testMachine.metadata.name}` } },
      });
      await kubeRequestOk(this.kubeConfig, `${path}/status`, {
        method: "PATCH",
        body: {
          status: {
            addresses: [{ type: "InternalIP", address: member.address }],
            initialization: { provisioned: true },
          },
        },
      });
      this.events.push({
        at: Date.now(),
        kind: "provisioned",
        machine: testMachine.metadata.name,
        detail: member.address,
      });
    }
  }

  /** The bootstrap provider's part: a data Secret and the config's v1beta2 status pointing at it. */
  private async bootstrapDataCreated(
    machine: string,
    ref: { apiGroup: string; kind: string; name: string },
  ): Promise<void> {
    const path = this.testKindPath(ref);
    const config = await kubeRequest<{ status?: { initialization?: { dataSecretCreated?: boolean } } }>(
      this.kubeConfig,
      path,
    );
    if (config.status !== 200 || config.body.status?.initialization?.dataSecretCreated) return;
    const dataSecretName = `${ref.name}-bootstrap-data`;
    const created = await kubeRequest(this.kubeConfig, `/api/v1/namespaces/${this.namespace}/secrets`, {
      body: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: dataSecretName, labels: { [LABEL_CLUSTER_NAME]: this.clusterName } },
        type: "cluster.x-k8s.io/secret",
        stringData: { value: `# the test bootstrap data of machine ${machine}\n`, format: "cloud-config" },
      },
    });
    if (created.status !== 201 && created.status !== 409)
      throw new Error(
        `create bootstrap data Secret ${dataSecretName}: HTTP ${created.status} ${created.text.slice(0, 200)}`,
      );
    await kubeRequestOk(this.kubeConfig, `${path}/status`, {
      method: "PATCH",
      body: { status: { dataSecretName, initialization: { dataSecretCreated: true } } },
    });
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
    const member = await this.startMember(name);
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

  /** The member of Machine (or TestMachine) `name`, started once: a new cluster for the first, a learner after. */
  private async startMember(name: string): Promise<EtcdMember> {
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
    return member;
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
