// The world behind the real controller's ports (src/ports): the management API shows the world as the
// QuorumControlPlane, its Cluster and CAPI v1beta2 Machines; the workload access lists its Nodes and opens an etcd
// client over its members, answering as etcd does. Every call first passes the schedule's CallGate (calls.ts),
// which judges it against the invariants before it takes effect and crashes the controller after call N.
import type { Cluster, Machine, MetaV1Condition, Node } from "../../src/api/capi.ts";
import {
  CONTROL_PLANE_NODE_LABEL,
  HEALTH_CHECK_SUCCEEDED_CONDITION,
  NODE_KUBEADM_LABEL_CONDITION,
  OWNER_REMEDIATED_CONDITION,
  UP_TO_DATE_CONDITION,
} from "../../src/api/capi.ts";
import {
  API_VERSION,
  CAPI_API_VERSION,
  DELETE_MACHINE_ANNOTATION,
  KIND,
  LAST_REMEDIATION_ANNOTATION,
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE,
  LABEL_CONTROL_PLANE_NAME,
  PAUSED_ANNOTATION,
  REMOVE_MEMBER_ANNOTATION,
  PRE_TERMINATE_HOOK,
  TEMPLATE_HASH_ANNOTATION,
} from "../../src/api/constants.ts";
import { formatLabelValue } from "../../src/api/label-value.ts";
import type { Unstructured } from "../../src/api/objects.ts";
import type { ObjectRef, QuorumControlPlane } from "../../src/api/types.ts";
import { machineTemplateHash } from "../../src/controller/snapshot-builder.ts";
import type {
  EtcdAlarm,
  EtcdClusterClient,
  EtcdMember,
  EtcdMemberStatus,
  ListMembersOptions,
  ManagementApi,
  NodeQuery,
  PromoteResult,
  WorkloadAccess,
} from "../../src/ports/index.ts";
import { EtcdRetryLaterError } from "../../src/ports/index.ts";
import type { WorkloadCaller } from "../../src/adapters/workload/kubeadm/flavour.ts";
import { WorkloadFlavours } from "../../src/adapters/workload/flavours.ts";
import { SimCrash, SimEtcdError, SimApiError, SimViolation, type CallGate } from "./calls.ts";
import { bootstrapTemplateRef, TEMPLATE_CLUSTER_CONFIGURATION } from "./kubeadm.ts";
import { simWorkloadCaller } from "./workload-api.ts";
import { apiServerBroken, learnerInSync } from "./evolve.ts";
import {
  CERTIFICATE_VALIDITY_MS,
  CLUSTER,
  CONTROL_PLANE,
  COPY_CONTROL_PLANE,
  dropMember,
  electLeader,
  etcdRefusesRemoval,
  findMachine,
  FOREIGN_HOOK,
  foreignHookHeld,
  findMember,
  drawLags,
  hostNameFor,
  markDeleting,
  NAMESPACE,
  newAddress,
  SIM_TIMERS,
  nodeLabelled,
  nodeReady,
  remediatedMachine,
  sameRemediation,
  workloadReadable,
  type BootFault,
  type SimMachine,
  type SimMember,
  type SimRemediation,
  type World,
} from "./world.ts";

const QCP_UID = "qcp-uid";
const ETCD_PEER_PORT = 2380;
const ETCD_CLIENT_PORT = 2379;

/** The world's template names ("tpl-3") as the real template hash a QuorumControlPlane with that template has. */
const realHashes = new Map<string, string>();
const worldTemplates = new Map<string, string>();

function realTemplateHash(template: string, kubeadm: boolean): string {
  const key = `${template}/${kubeadm}`;
  let hash = realHashes.get(key);
  if (hash === undefined) {
    hash = machineTemplateHash({
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: CONTROL_PLANE },
      spec: { version: "", machineTemplate: machineTemplate(template, kubeadm) },
    });
    realHashes.set(key, hash);
    worldTemplates.set(hash, template);
  }
  return hash;
}

function machineTemplate(
  template: string,
  kubeadm: boolean,
  labels: Record<string, string> = {},
): QuorumControlPlane["spec"]["machineTemplate"] {
  return {
    ...(Object.keys(labels).length > 0 ? { metadata: { labels: { ...labels } } } : {}),
    spec: {
      infrastructureRef: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
        kind: "SimMachineTemplate",
        name: `infra-${template}`,
      },
      bootstrapConfigTemplateRef: bootstrapTemplateRef(kubeadm),
    },
  };
}

export interface SimPortsOptions {
  /** The boot fault of a Machine created now (drawn by the fault injector). */
  bootFault: () => BootFault | undefined;
  /** Serve the second QuorumControlPlane of a secondOwner world (World.copy) instead of `qcp`. */
  asCopy?: boolean;
}

/** The three ports over one world; `gate` is replaced for every reconcile. */
/** The real flavours on the world's clock; the simulator's crash and violation signals pass through them. */
function simFlavours(world: World): WorkloadFlavours {
  return new WorkloadFlavours(
    () => world.now,
    (error) => error instanceof SimCrash || error instanceof SimViolation,
  );
}

export class SimPorts {
  gate!: CallGate;
  /** This reconcile's Machine list is the previous one's (an informer that has not caught up). */
  lagging = false;
  private cachedMachines: Machine[] | undefined;
  /** The real flavours (kubeadm's steps included), one set per controller process, as ClusterWorkloadAccess keeps. */
  private flavours: WorkloadFlavours;
  private readonly workloadCaller: WorkloadCaller;

  constructor(
    private readonly world: World,
    private readonly options: SimPortsOptions,
  ) {
    this.flavours = simFlavours(world);
    this.workloadCaller = simWorkloadCaller(world, () => this.gate);
  }

  /** The name of the QuorumControlPlane these ports serve. */
  get name(): string {
    return this.options.asCopy ? COPY_CONTROL_PLANE : this.world.controlPlaneName;
  }

  private get copy(): NonNullable<World["copy"]> | undefined {
    return this.options.asCopy ? this.world.copy : undefined;
  }

  /**
   * A restarted controller lists everything afresh (its first reconcile sees no lagging cache) and has a new
   * KubeadmFlavour, whose memory of steps seen done died with the process.
   */
  restart(): void {
    this.cachedMachines = undefined;
    this.flavours = simFlavours(this.world);
  }

  get canLag(): boolean {
    return this.cachedMachines !== undefined;
  }

  readonly management: ManagementApi = {
    getControlPlane: async (namespace, name) => {
      this.gate.call(`get QuorumControlPlane ${name}`, { kind: "none" });
      return namespace === NAMESPACE && name === this.name ? this.controlPlane() : undefined;
    },
    getCluster: async (_namespace, name) => {
      this.gate.call(`get Cluster ${name}`, { kind: "none" });
      return name === CLUSTER ? this.cluster() : undefined;
    },
    listControlPlaneMachines: async () => {
      this.gate.call(`list Machines${this.lagging && this.cachedMachines ? " (stale cache)" : ""}`, { kind: "none" });
      if (this.lagging && this.cachedMachines) return structuredClone(this.cachedMachines);
      this.cachedMachines = this.world.machines.map((machine) => machineObject(this.world, machine));
      return this.cachedMachines;
    },
    getReferenced: async (ref: ObjectRef, namespace: string) => {
      this.gate.call(`get ${ref.kind} ${ref.name}`, { kind: "none" });
      const template: Unstructured = {
        apiVersion: ref.apiVersion ?? `${ref.apiGroup}/v1beta1`,
        kind: ref.kind,
        metadata: {
          name: ref.name,
          namespace,
          resourceVersion: String(this.world.templateOwners.get(`${ref.kind}/${ref.name}`)?.length ?? 0),
          ...(this.world.templateOwners.has(`${ref.kind}/${ref.name}`)
            ? { ownerReferences: structuredClone(this.world.templateOwners.get(`${ref.kind}/${ref.name}`)) }
            : {}),
        },
        // The KubeadmConfigTemplate carries the sample's clusterConfiguration, which the real flavour syncs.
        spec: {
          template: {
            spec:
              ref.kind === "KubeadmConfigTemplate"
                ? { clusterConfiguration: structuredClone(TEMPLATE_CLUSTER_CONFIGURATION) }
                : {},
          },
        },
      };
      return template;
    },
    setOwnerReferences: async (object, ownerReferences) => {
      this.gate.call(`patch ownerReferences of ${object.kind} ${object.metadata.name}`, { kind: "none" });
      this.world.templateOwners.set(`${object.kind}/${object.metadata.name}`, structuredClone(ownerReferences));
      this.gate.done("ok");
    },
    createIfAbsent: async (object) => {
      if (object.kind !== "Machine") {
        this.gate.call(`create ${object.kind} ${object.metadata.name}`, { kind: "none" });
        const key = `${object.kind}/${object.metadata.name}`;
        if (this.world.clones.has(key)) return this.gate.done("exists");
        this.world.clones.add(key);
        return this.gate.done("created");
      }
      const machine = object as Machine;
      this.gate.call(`create Machine ${machine.metadata.name}`, {
        kind: "create-machine",
        ...(machine.spec.failureDomain ? { failureDomain: machine.spec.failureDomain } : {}),
      });
      if (findMachine(this.world, machine.metadata.name)) return this.gate.done("exists");
      this.createMachine(machine);
      return this.gate.done("created");
    },
    deleteMachine: async (_namespace, name) => {
      this.gate.call(`delete Machine ${name}`, { kind: "delete-machine", machine: name });
      const machine = findMachine(this.world, name);
      if (machine) markDeleting(this.world, machine);
      this.gate.done(machine ? "ok" : "ok (already gone)");
    },
    patchAnnotations: async (_apiVersion, kind, _namespace, name, annotations, resourceVersion) => {
      if (kind === KIND) return this.annotateControlPlane(name, annotations);
      const hook = annotations[PRE_TERMINATE_HOOK];
      const effect =
        kind === "Machine" && hook !== undefined
          ? { kind: "set-hook" as const, machine: name, hook: hook !== null }
          : { kind: "none" as const };
      this.gate.call(`patch annotations of ${kind} ${name}`, effect);
      const machine = findMachine(this.world, name);
      if (!machine) throw this.gate.fail(new SimApiError(404, `machines.cluster.x-k8s.io "${name}" not found`));
      if (resourceVersion !== undefined && resourceVersion !== resourceVersionOf(this.world, machine)) {
        throw this.gate.fail(
          new SimApiError(
            409,
            `Operation cannot be fulfilled on machines.cluster.x-k8s.io "${name}": the object has been modified`,
          ),
        );
      }
      if (hook !== undefined) machine.hook = hook !== null;
      // Any other key (the certificates expiry Quorum records) is kept on the Machine as written.
      const { [PRE_TERMINATE_HOOK]: _hook, ...others } = annotations;
      applyKeys(machine.annotations, others);
      this.gate.done("ok");
      return resourceVersionOf(this.world, machine);
    },
    patchInPlace: async (ref, _namespace, patch, resourceVersion) => {
      this.gate.call(`patch in place ${ref.kind} ${ref.name}`, { kind: "none" });
      // The clones' metadata is not modelled: only the Machine's is read back.
      if (ref.kind !== "Machine") return this.gate.done("ok");
      const machine = findMachine(this.world, ref.name);
      if (!machine) return this.gate.done(undefined);
      if (resourceVersion !== undefined && resourceVersion !== resourceVersionOf(this.world, machine)) {
        throw this.gate.fail(
          new SimApiError(
            409,
            `Operation cannot be fulfilled on machines.cluster.x-k8s.io "${ref.name}": the object has been modified`,
          ),
        );
      }
      applyKeys(machine.labels, patch.labels);
      applyKeys(machine.annotations, patch.annotations);
      this.gate.done("ok");
      return resourceVersionOf(this.world, machine);
    },
    setMachineConditions: async (_namespace, name, conditions, resourceVersion) => {
      this.gate.call(`set conditions of Machine ${name}`, { kind: "none" });
      const machine = findMachine(this.world, name);
      if (!machine) return this.gate.done(undefined);
      if (resourceVersion !== resourceVersionOf(this.world, machine)) {
        throw this.gate.fail(
          new SimApiError(
            409,
            `Operation cannot be fulfilled on machines.cluster.x-k8s.io "${name}": the object has been modified`,
          ),
        );
      }
      // The world keeps only the conditions Quorum owns; the rest are CAPI's, made up from the world when shown.
      machine.ownedConditions = structuredClone(
        conditions.filter((condition) => OWNED_MACHINE_CONDITIONS.has(condition.type)),
      );
      if (!conditions.some((condition) => condition.type === OWNER_REMEDIATED_CONDITION))
        machine.ownerRemediatedPending = false;
      this.gate.done("ok");
      return resourceVersionOf(this.world, machine);
    },
    setFinalizers: async (_controlPlane, finalizers) => {
      this.gate.call("set finalizers", { kind: "none" });
      if (this.copy) this.copy.finalizers = [...finalizers];
      else this.world.finalizers = [...finalizers];
      return this.gate.done("ok");
    },
    patchStatus: async (_controlPlane, patch) => {
      this.gate.call("patch status", { kind: "write-status" });
      if (this.copy) {
        this.copy.status = applyMergePatch(this.copy.status ?? {}, patch) as World["status"];
        this.gate.done("ok");
        return this.controlPlane();
      }
      this.world.status = applyMergePatch(this.world.status ?? {}, patch) as World["status"];
      this.noteSeenOutages();
      this.gate.done("ok");
      return this.controlPlane();
    },
    event: async (_controlPlane, type, reason) => {
      this.gate.call(`event ${type} ${reason}`, { kind: "none" });
      this.gate.done("ok");
    },
  };

  readonly workload: WorkloadAccess = {
    ensureCertificates: async () => {
      this.gate.call("ensure certificates", { kind: "none" });
    },
    // As ClusterWorkloadAccess (src/adapters/workload/access.ts) does, through the real WorkloadFlavours over the
    // world's kubeadm objects (workload-api.ts); a generic world's flavour needs nothing in the workload cluster.
    workloadSteps: (controlPlane, cluster, template) =>
      this.flavours.workloadSteps(controlPlane, cluster, () => this.workloadCaller, template),
    prepareWorkload: (controlPlane, cluster, step, template) =>
      this.flavours.prepare(controlPlane, cluster, step, () => this.workloadCaller, template),
    nodes: async (_controlPlane, _cluster, query) => {
      this.gate.call("list Nodes", { kind: "none" });
      // The workload apiserver answers only while its etcd has a leader.
      if (this.world.leaderId === undefined)
        throw this.gate.fail(new Error("the workload cluster's API server did not answer: etcdserver: no leader"));
      if (!workloadReadable(this.world))
        throw this.gate.fail(
          new Error("workload API server https://sim.example:6443: x509: certificate signed by unknown authority"),
        );
      return answerNodeQuery(nodeObjects(this.world), query);
    },
    // Simulated: what dialling each Machine's /readyz answers (src/adapters/workload/api-server-readiness.ts dials for
    // real). A Machine's API server answers while the Machine runs, its etcd member is up and etcd has a leader, unless
    // it joined with a template whose kube-apiserver cannot start.
    apiServers: async (controlPlane, _cluster, machines) => {
      if (!this.flavours.of(controlPlane).machinesServeApi) return {};
      this.gate.call(`dial ${machines.length} API server(s)`, { kind: "none" });
      const result: Record<string, { ready: boolean; detail: string }> = {};
      for (const dialled of machines) {
        const url = `(simulated) https://${dialled.address}:6443/readyz`;
        const machine = this.world.machines.find((candidate) => candidate.name === dialled.name);
        const member = machine?.memberId === undefined ? undefined : findMember(this.world, machine.memberId);
        if (machine && apiServerBroken(this.world, machine))
          result[dialled.name] = {
            ready: false,
            detail: `${url}: connect ECONNREFUSED (kube-apiserver exits: unknown flag)`,
          };
        else if (machine?.phase === "running" && member?.up && this.world.leaderId !== undefined)
          result[dialled.name] = { ready: true, detail: `${url} ok` };
        else result[dialled.name] = { ready: false, detail: `${url}: connect ECONNREFUSED` };
      }
      return result;
    },
    // Simulated: what a TLS handshake with each Machine's API server shows of its serving certificate
    // (src/adapters/workload/serving-certificate.ts dials for real), only for kubeadm Machines, as
    // ClusterWorkloadAccess. A Machine's API server answers while the Machine runs and its etcd member is up, unless
    // it joined with a template whose kube-apiserver cannot start.
    certificatesExpiry: async (controlPlane, _cluster, machines) => {
      if (!this.flavours.of(controlPlane).machinesServeApi || machines.length === 0)
        return { expiries: {}, errors: [] };
      this.gate.call(`dial ${machines.length} API server(s) for their certificates`, { kind: "none" });
      const expiries: Record<string, number> = {};
      const errors: string[] = [];
      for (const dialled of machines) {
        const machine = findMachine(this.world, dialled.name);
        const member = machine?.memberId === undefined ? undefined : findMember(this.world, machine.memberId);
        const serving = machine?.phase === "running" && member?.up === true && !apiServerBroken(this.world, machine);
        if (serving && machine.certificatesExpiry !== undefined) expiries[dialled.name] = machine.certificatesExpiry;
        else
          errors.push(
            `Machine ${dialled.name}: (simulated) TLS handshake with ${dialled.address}:6443: connect ECONNREFUSED`,
          );
      }
      return { expiries, errors };
    },
    etcd: async (_controlPlane, _cluster, endpoints) => {
      this.gate.call(`open etcd client (${endpoints.length} endpoints)`, { kind: "none" });
      return new SimEtcdClient(this.world, this.gate, endpoints);
    },
    forget: async () => {},
  };

  controlPlane(): QuorumControlPlane {
    const { spec } = this.world;
    realTemplateHash(spec.templateHash, this.world.traits.kubeadm);
    return {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: {
        name: this.name,
        namespace: NAMESPACE,
        uid: this.copy ? `${COPY_CONTROL_PLANE}-uid` : QCP_UID,
        generation: spec.generation,
        resourceVersion: String(spec.generation),
        labels: { [LABEL_CLUSTER_NAME]: CLUSTER },
        ownerReferences: [
          { apiVersion: CAPI_API_VERSION, kind: "Cluster", name: CLUSTER, uid: "cluster-uid", controller: true },
        ],
        finalizers: [...(this.copy ? this.copy.finalizers : this.world.finalizers)],
        // The copy carries the same spec (a copy-paste), but the operator annotates only the control plane in charge.
        ...(!this.copy && (spec.paused || spec.removeMemberIds.length > 0 || this.world.lastRemediationAnnotation)
          ? {
              annotations: {
                ...(this.world.lastRemediationAnnotation
                  ? { [LAST_REMEDIATION_ANNOTATION]: this.world.lastRemediationAnnotation }
                  : {}),
                ...(spec.paused ? { [PAUSED_ANNOTATION]: "" } : {}),
                ...(spec.removeMemberIds.length > 0
                  ? { [REMOVE_MEMBER_ANNOTATION]: spec.removeMemberIds.join(",") }
                  : {}),
              },
            }
          : {}),
      },
      spec: {
        replicas: spec.replicas,
        version: spec.version,
        machineTemplate: machineTemplate(spec.templateHash, this.world.traits.kubeadm, spec.machineLabels),
        rollout: {
          strategy: {
            type: "RollingUpdate",
            rollingUpdate: { maxSurge: spec.maxSurge, memberRemoval: spec.memberRemoval },
          },
          ...(spec.certificatesExpiryDays !== undefined
            ? { before: { certificatesExpiryDays: spec.certificatesExpiryDays } }
            : {}),
        },
        remediation: {
          maxRetry: SIM_TIMERS.remediationMaxRetry,
          retryPeriod: seconds(SIM_TIMERS.remediationRetryPeriodMs),
          minHealthyPeriod: seconds(SIM_TIMERS.remediationMinHealthyPeriodMs),
          machineLostAfter: seconds(SIM_TIMERS.machineLostAfterMs),
        },
        etcd: {
          ghostMemberGracePeriod: seconds(SIM_TIMERS.ghostGracePeriodMs),
          learnerPromotionTimeout: seconds(SIM_TIMERS.learnerPromotionTimeoutMs),
          learnerStallTimeout: seconds(SIM_TIMERS.learnerStallMs),
          memberJoinGracePeriod: seconds(SIM_TIMERS.memberJoinGracePeriodMs),
        },
      },
      // Not copied: reconcile() never changes what it read, and patchStatus replaces world.status with a new object.
      ...(this.copy
        ? this.copy.status
          ? { status: this.copy.status }
          : {}
        : this.world.status
          ? { status: this.world.status }
          : {}),
    };
  }

  private cluster(): Cluster {
    return {
      apiVersion: CAPI_API_VERSION,
      kind: "Cluster",
      metadata: { name: CLUSTER, namespace: NAMESPACE, uid: "cluster-uid" },
      spec: {
        paused: this.world.spec.clusterPaused,
        controlPlaneEndpoint: { host: "sim.example", port: 6443 },
        controlPlaneRef: { apiGroup: "controlplane.cluster.x-k8s.io", kind: KIND, name: this.world.controlPlaneName },
      },
      status: {
        initialization: { infrastructureProvisioned: true, controlPlaneInitialized: this.world.initialized },
        failureDomains: this.world.failureDomains.map((name) => ({ name, controlPlane: true })),
      },
    };
  }

  /** The QuorumControlPlane's annotations the controller writes: only its remediation memory. */
  private annotateControlPlane(name: string, annotations: Record<string, string | null>): string | undefined {
    const value = annotations[LAST_REMEDIATION_ANNOTATION];
    const machine = recordedMachineName(value);
    this.gate.call(
      `patch annotations of ${KIND} ${name}`,
      machine ? { kind: "record-remediation", machine } : { kind: "none" },
    );
    // The copy's annotations are not modelled: it must not remediate at all (rule 7 judges that call).
    if (value !== undefined && !this.copy) {
      this.world.lastRemediationAnnotation = value ?? undefined;
      // Another try of the same Machine (after a crash, on a stale cache) is the same remediation: it counts from the first.
      const remediated = machine ? remediatedMachine(this.world, machine) : undefined;
      if (remediated && !sameRemediation(this.world, remediated)) this.recordRemediation(remediated);
    }
    this.gate.done("ok");
    return String(this.world.spec.generation);
  }

  /**
   * A down member whose connection age the written status no longer trusts (or that status lost): the controller saw
   * this outage. An answering member the written status keeps no downSince for: the controller saw it back.
   */
  private noteSeenOutages(): void {
    const kept = new Map((this.world.status?.etcd?.members ?? []).map((entry) => [entry.id, entry]));
    for (const member of this.world.members) {
      const entry = kept.get(member.id);
      if (!member.up && entry?.startedObserved === undefined) member.outageSeen = true;
      if (member.up && entry !== undefined && entry.downSince === undefined) member.backSeen = true;
    }
  }

  /**
   * World truth for rule 9: the remediation's retry count by KCP's rules, and whether its replacement already exists
   * (more Machines than replicas: the only voter's replacement joins before it leaves).
   */
  private recordRemediation(machine: SimMachine): void {
    const world = this.world;
    const replaced = machine.replaces;
    const retry =
      replaced && world.now - replaced.at < SIM_TIMERS.remediationMinHealthyPeriodMs ? replaced.retry + 1 : 0;
    const active = world.machines.filter((candidate) => candidate.deleting === undefined).length;
    (world.remediations ??= []).push({
      machine: machine.name,
      created: machine.created,
      at: world.now,
      retry,
      ...(active > world.spec.replicas ? { replacedBy: "surge" } : {}),
    });
  }

  /** The first Machine created after the last remediation's Machine began deleting replaces it (world truth). */
  private replacedRemediation(name: string): SimRemediation | undefined {
    const last = this.world.remediations?.at(-1);
    if (!last || last.replacedBy !== undefined) return undefined;
    if (this.world.now - last.at >= SIM_TIMERS.remediationMinHealthyPeriodMs) return undefined;
    const remediated = this.world.machines.find(
      (candidate) => candidate.name === last.machine && candidate.created === last.created,
    );
    if (remediated && remediated.deleting === undefined) return undefined;
    last.replacedBy = name;
    return last;
  }

  /** CAPI accepted a new Machine: the world starts provisioning it. */
  private createMachine(object: Machine): void {
    const world = this.world;
    const replaces = this.replacedRemediation(object.metadata.name);
    const bootFault = this.options.bootFault();
    const name = object.metadata.name;
    const realHash = object.metadata.annotations?.[TEMPLATE_HASH_ANNOTATION] ?? "";
    const machine: SimMachine = {
      name,
      created: world.now,
      createdStep: world.step,
      version: object.spec.version ?? "",
      templateHash: worldTemplates.get(realHash) ?? realHash,
      labels: withoutKeys(object.metadata.labels, OWN_LABELS),
      annotations: withoutKeys(object.metadata.annotations, OWN_ANNOTATIONS),
      ...(object.spec.failureDomain ? { failureDomain: object.spec.failureDomain } : {}),
      hostName: "",
      phase: "provisioning",
      phaseUntil: world.step + world.rng.int(1, 3),
      infrastructureReady: false,
      bootstrapReady: false,
      hook: object.metadata.annotations?.[PRE_TERMINATE_HOOK] !== undefined,
      ...(replaces ? { replaces } : {}),
      remediationRequested: false,
      failed: false,
      markedForDeletion: false,
      ...(bootFault ? { bootFault } : {}),
      nodeRegistered: false,
      // kubeadm issues its certificates for a year at the join (a generic world's are not modelled).
      ...(world.traits.certificateExpiry && world.traits.kubeadm
        ? { certificatesExpiry: world.now + CERTIFICATE_VALIDITY_MS }
        : {}),
    };
    machine.address = newAddress(world);
    machine.hostName = hostNameFor(world, name, machine.address);
    drawLags(world, machine);
    world.machines.push(machine);
    if (bootFault) this.gate.note(`${name} will fail: ${bootFault}`);
  }
}

/**
 * Keys Quorum sets itself on a Machine (and the other controller's hook, which the world holds): machineObject adds
 * them, so a SimMachine keeps only the template's.
 */
const OWN_LABELS = [LABEL_CLUSTER_NAME, LABEL_CONTROL_PLANE, LABEL_CONTROL_PLANE_NAME];
const OWN_ANNOTATIONS = [TEMPLATE_HASH_ANNOTATION, PRE_TERMINATE_HOOK, FOREIGN_HOOK];

function withoutKeys(values: Record<string, string> | undefined, keys: string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(values ?? {}).filter(([key]) => !keys.includes(key)));
}

function applyKeys(values: Record<string, string>, patch: Record<string, string | null> | undefined): void {
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === null) delete values[key];
    else values[key] = value;
  }
}

function seconds(ms: number): string {
  return `${ms / 1000}s`;
}

/** Opaque, as in Kubernetes; it changes whenever anything the controller reads of the Machine changes. */
function resourceVersionOf(world: World, machine: SimMachine): string {
  return [
    machine.phase,
    machine.deleting ?? "",
    machine.hook,
    machine.nodeRegistered,
    machine.remediationRequested,
    machine.ownerRemediatedPending === true,
    machine.failed,
    machine.markedForDeletion,
    machine.infrastructureReady,
    machine.bootstrapReady,
    world.step >= (machine.drainedAt ?? 0),
    foreignHookHeld(world, machine),
    JSON.stringify(machine.labels),
    JSON.stringify(machine.annotations),
    JSON.stringify(machine.ownedConditions ?? []),
  ].join("/");
}

/** A Machine as CAPI v1beta2 shows it. */
const OWNED_MACHINE_CONDITIONS = new Set<string>([
  UP_TO_DATE_CONDITION,
  OWNER_REMEDIATED_CONDITION,
  NODE_KUBEADM_LABEL_CONDITION,
]);

/** The Machine a remediation memory annotation names ("" for none or garbage). */
function recordedMachineName(value: string | null | undefined): string {
  try {
    return value ? String((JSON.parse(value) as { machine?: unknown }).machine ?? "") : "";
  } catch {
    return "";
  }
}

export function machineObject(world: World, machine: SimMachine): Machine {
  const annotations: Record<string, string> = {
    ...machine.annotations,
    [TEMPLATE_HASH_ANNOTATION]: realTemplateHash(machine.templateHash, world.traits.kubeadm),
  };
  if (machine.hook) annotations[PRE_TERMINATE_HOOK] = "";
  if (foreignHookHeld(world, machine)) annotations[FOREIGN_HOOK] = "";
  if (machine.markedForDeletion) annotations[DELETE_MACHINE_ANNOTATION] = "";
  const since = new Date(world.now).toISOString();
  const conditions: MetaV1Condition[] = [];
  if (machine.remediationRequested || machine.ownerRemediatedPending)
    conditions.push(
      {
        type: HEALTH_CHECK_SUCCEEDED_CONDITION,
        status: machine.remediationRequested ? "False" : "True",
        reason: machine.remediationRequested ? "UnhealthyNode" : "HealthCheckSucceeded",
        lastTransitionTime: since,
      },
      ...(machine.ownerRemediatedPending
        ? [
            {
              type: OWNER_REMEDIATED_CONDITION,
              status: "False" as const,
              reason: "WaitingForRemediation",
              lastTransitionTime: since,
            },
          ]
        : []),
    );
  if (machine.deleting !== undefined) {
    const drained = world.step >= (machine.drainedAt ?? 0);
    conditions.push({
      type: "Deleting",
      status: "True",
      reason: drained ? "WaitingForPreTerminateHook" : "DrainingNode",
      lastTransitionTime: since,
    });
  }
  for (const owned of machine.ownedConditions ?? []) {
    const at = conditions.findIndex((condition) => condition.type === owned.type);
    if (at >= 0) conditions[at] = { ...owned };
    else conditions.push({ ...owned });
  }
  const addresses = machine.infrastructureReady && machine.address ? addressesOf(world, machine, machine.address) : [];
  const nodeRef = machine.nodeRegistered && world.step >= (machine.nodeRefAt ?? 0);
  return {
    apiVersion: CAPI_API_VERSION,
    kind: "Machine",
    metadata: {
      name: machine.name,
      namespace: NAMESPACE,
      uid: `uid-${machine.name}`,
      resourceVersion: resourceVersionOf(world, machine),
      creationTimestamp: new Date(machine.created).toISOString(),
      ...(machine.deleting !== undefined ? { deletionTimestamp: new Date(machine.deleting).toISOString() } : {}),
      labels: {
        ...machine.labels,
        [LABEL_CLUSTER_NAME]: CLUSTER,
        [LABEL_CONTROL_PLANE]: "",
        [LABEL_CONTROL_PLANE_NAME]: formatLabelValue(world.controlPlaneName),
      },
      annotations,
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND,
          name: world.controlPlaneName,
          uid: QCP_UID,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      clusterName: CLUSTER,
      version: machine.version,
      bootstrap: {
        configRef: {
          apiGroup: "bootstrap.cluster.x-k8s.io",
          kind: world.traits.kubeadm ? "KubeadmConfig" : "SimBootstrapConfig",
          name: machine.name,
        },
        ...(machine.bootstrapReady ? { dataSecretName: machine.name } : {}),
      },
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "SimMachine", name: machine.name },
      ...(machine.failureDomain ? { failureDomain: machine.failureDomain } : {}),
      ...(machine.infrastructureReady ? { providerID: `sim://${machine.name}` } : {}),
    },
    status: {
      initialization: {
        infrastructureProvisioned: machine.infrastructureReady,
        bootstrapDataSecretCreated: machine.bootstrapReady,
      },
      ...(nodeRef ? { nodeRef: { name: machine.hostName } } : {}),
      addresses,
      conditions,
      phase:
        machine.deleting !== undefined
          ? "Deleting"
          : machine.failed
            ? "Failed"
            : machine.nodeRegistered
              ? "Running"
              : machine.infrastructureReady
                ? "Provisioned"
                : "Provisioning",
      ...(machine.failed
        ? {
            deprecated: {
              v1beta1: { failureReason: "CreateError", failureMessage: "the simulated infrastructure failed" },
            },
          }
        : {}),
    },
  };
}

/** The InternalIP etcd listens on, or, while the Machine's addresses lag, nothing or only an external address. */
function addressesOf(world: World, machine: SimMachine, address: string): { type: string; address: string }[] {
  if (world.step < (machine.addressAt ?? 0)) {
    return machine.addressesBefore === "external-only"
      ? [{ type: "ExternalIP", address: `203.0.113.${address.split(".").at(-1)}` }]
      : [];
  }
  return [{ type: "InternalIP", address }];
}

/**
 * What the workload API server answers a NodeQuery with: the list by label key (every Node without one), then each
 * named Node the list left out, read by name.
 */
function answerNodeQuery(nodes: Node[], query: NodeQuery = { names: [] }): Node[] {
  const { labelSelector } = query;
  const listed = labelSelector ? nodes.filter((node) => node.metadata.labels?.[labelSelector] !== undefined) : nodes;
  const read = nodes.filter(
    (node) =>
      query.names.includes(node.metadata.name) && !listed.some((other) => other.metadata.name === node.metadata.name),
  );
  return [...listed, ...read];
}

function nodeObjects(world: World): Node[] {
  const nodes: Node[] = [];
  const ready = (value: boolean, since: number) => ({
    conditions: [
      { type: "Ready", status: value ? "True" : "False", lastTransitionTime: new Date(since).toISOString() },
    ],
  });
  for (const machine of world.machines) {
    if (!machine.nodeRegistered) continue;
    const up = nodeReady(world, machine);
    // A Node registered in this very step gets its first condition now (trackNodeReadiness runs before the controller).
    const since = machine.nodeReadiness?.ready === up ? machine.nodeReadiness.since : world.now;
    const providerID = world.step >= (machine.nodeRefAt ?? 0) ? { providerID: `sim://${machine.name}` } : {};
    nodes.push({
      metadata: {
        name: machine.hostName,
        ...(nodeLabelled(world, machine) ? { labels: { [CONTROL_PLANE_NODE_LABEL]: "" } } : {}),
      },
      spec: providerID,
      status: {
        ...ready(up, since),
        addresses: machine.address ? [{ type: "InternalIP", address: machine.address }] : [],
      },
    });
  }
  for (const stale of world.staleNodes) {
    if (!nodes.some((node) => node.metadata.name === stale.name))
      nodes.push({
        metadata: { name: stale.name, ...(stale.labelled ? { labels: { [CONTROL_PLANE_NODE_LABEL]: "" } } : {}) },
        status: { ...ready(false, stale.notReadySince), addresses: [{ type: "InternalIP", address: stale.address }] },
      });
  }
  return nodes;
}

/** The world's etcd as the etcd port: each call answers as etcd (and the real adapter on top of it) does. */
class SimEtcdClient implements EtcdClusterClient {
  private readonly hosts: Set<string>;

  constructor(
    private readonly world: World,
    private readonly gate: CallGate,
    endpoints: string[],
  ) {
    this.hosts = new Set(endpoints.map((endpoint) => new URL(endpoint).hostname));
  }

  async listMembers(options: ListMembersOptions = {}): Promise<EtcdMember[]> {
    const serializable = options.serializable === true;
    this.gate.call(serializable ? "etcd member list (serializable)" : "etcd member list", { kind: "none" });
    // The client reaches etcd through the Machine addresses it was given: some member there must answer.
    if (!this.world.members.some((member) => member.up && this.hosts.has(member.peerHost))) {
      throw this.gate.fail(
        new SimApiError(
          0,
          `no etcd member answered within its deadline (${this.hosts.size} endpoints tried)`,
          "EndpointUnreachable",
        ),
      );
    }
    // A linearizable read waits for the leader's read index: without a leader it runs into its deadline.
    if (!serializable && this.world.leaderId === undefined) {
      throw this.gate.fail(
        new SimApiError(
          0,
          `no etcd member answered within its deadline (${this.hosts.size} endpoints tried): context deadline exceeded`,
          "EndpointUnreachable",
        ),
      );
    }
    // A serializable list is the answering voter's own view (learners refuse member lists): without a leader it has
    // applied only what it had when it lost the leader, or when it went down before that, so a member added since is
    // missing from it. The worst such view answers.
    let listed = this.world.members;
    if (this.world.leaderId === undefined) {
      const answering = this.world.members
        .filter((member) => member.up && !member.learner && this.hosts.has(member.peerHost))
        .reduce<SimMember | undefined>(
          (stalest, member) => (stalest && stalest.appliedIndex <= member.appliedIndex ? stalest : member),
          undefined,
        );
      if (!answering) {
        throw this.gate.fail(
          new SimApiError(0, "etcdserver: rpc not supported for learner (no voter answered)", "EndpointUnreachable"),
        );
      }
      listed = listed.filter(
        (member) => member === answering || member.addedAt === undefined || member.addedAt <= answering.appliedIndex,
      );
      if (listed.length < this.world.members.length) this.gate.note(`${answering.name}'s own view`);
    }
    return listed.map((member) => ({
      id: member.id,
      name: member.name,
      peerURLs: [`https://${member.peerHost}:${ETCD_PEER_PORT}`],
      clientURLs: member.started ? [`https://${member.peerHost}:${ETCD_CLIENT_PORT}`] : [],
      learner: member.learner,
    }));
  }

  async memberStatuses(members?: EtcdMember[]): Promise<EtcdMemberStatus[]> {
    this.gate.call("etcd member statuses", { kind: "none" });
    const listed =
      members ??
      this.world.members.map((member) => ({
        id: member.id,
        clientURLs: member.started ? [`https://${member.peerHost}:${ETCD_CLIENT_PORT}`] : [],
      }));
    return listed.map((entry) => {
      const member = findMember(this.world, entry.id);
      if (entry.clientURLs.length === 0)
        return {
          memberId: entry.id,
          reachable: false,
          leader: false,
          errors: ["member has not started yet (no client URLs)"],
        };
      const endpoint = entry.clientURLs[0];
      if (!member || !member.up)
        return { memberId: entry.id, endpoint, reachable: false, leader: false, errors: ["context deadline exceeded"] };
      return statusOf(this.world, member, endpoint);
    });
  }

  async alarms(): Promise<EtcdAlarm[]> {
    this.gate.call("etcd alarms", { kind: "none" });
    return this.world.alarms.map((alarm) => ({ ...alarm }));
  }

  async addMember(): Promise<EtcdMember> {
    throw new Error("the controller never adds members (kubeadm join does)");
  }

  async promoteLearner(memberId: string): Promise<PromoteResult> {
    this.gate.call(`etcd promote ${this.label(memberId)}`, { kind: "promote-learner", memberId });
    if (this.world.leaderId === undefined)
      throw this.gate.fail(new EtcdRetryLaterError("member promote", "no-leader", 1_000, "etcdserver: no leader"));
    const member = findMember(this.world, memberId);
    if (!member) throw this.gate.fail(new SimEtcdError("member promote", "etcdserver: member not found"));
    if (!member.learner) return this.gate.done({ promoted: true }, "ok (already a voter)");
    if (!learnerInSync(this.world, member.appliedIndex))
      return this.gate.done(
        { promoted: false, reason: "not caught up" },
        "etcdserver: can only promote a learner member which is in sync with leader",
      );
    member.learner = false;
    electLeader(this.world);
    return this.gate.done({ promoted: true });
  }

  async removeMember(memberId: string): Promise<{ removed: boolean }> {
    this.gate.call(`etcd remove ${this.label(memberId)}`, { kind: "remove-member", memberId });
    const member = findMember(this.world, memberId);
    if (!member) return this.gate.done({ removed: false }, "etcdserver: member not found (counts as removed)");
    // A membership change is a raft proposal: it needs a leader.
    if (this.world.leaderId === undefined)
      throw this.gate.fail(new EtcdRetryLaterError("member remove", "no-leader", 1_000, "etcdserver: no leader"));
    if (etcdRefusesRemoval(this.world, member))
      throw this.gate.fail(
        new EtcdRetryLaterError("member remove", "removal-window", 1_000, "etcdserver: unhealthy cluster"),
      );
    dropMember(this.world, member.id);
    return this.gate.done({ removed: true });
  }

  async moveLeader(toMemberId: string): Promise<void> {
    this.gate.call(`etcd move leader to ${this.label(toMemberId)}`, { kind: "move-leader", toMemberId });
    if (this.world.leaderId === undefined)
      throw this.gate.fail(
        new EtcdRetryLaterError("move leader", "no-leader", 1_000, "no reachable member reports itself leader"),
      );
    if (this.world.leaderId === toMemberId) return this.gate.done(undefined, "ok (already leader)");
    const target = findMember(this.world, toMemberId);
    if (!target || target.learner || !target.up)
      throw this.gate.fail(new SimEtcdError("move leader", "etcdserver: bad leader transferee"));
    this.world.leaderId = target.id;
    target.appliedIndex = this.world.leaderIndex;
    this.gate.done(undefined);
  }

  async close(): Promise<void> {}

  private label(memberId: string): string {
    const member = findMember(this.world, memberId);
    return member ? `${member.name || "(unstarted)"} ${memberId}` : memberId;
  }
}

function statusOf(world: World, member: SimMember, endpoint: string): EtcdMemberStatus {
  const leader = world.leaderId === member.id;
  return {
    memberId: member.id,
    endpoint,
    reachable: true,
    leader,
    leaderId: world.leaderId ?? "0",
    raftTerm: 2,
    raftIndex: leader ? world.leaderIndex : member.appliedIndex,
    raftAppliedIndex: member.appliedIndex,
    learner: member.learner,
    errors: world.leaderId === undefined ? ["etcdserver: no leader"] : [],
  };
}

/** RFC 7386: objects merge key by key, null deletes, anything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return structuredClone(patch);
  const result: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}
