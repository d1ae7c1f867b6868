// Issue 12, bug 4 through the real shell: the informer-backed ManagementApi lists the Machines, claimMachines tells
// ours from the others, the real planner decides and the real status code writes the OwnershipConflict condition.
// The worlds are the ones real management clusters hold: a copy-pasted second QuorumControlPlane for one Cluster,
// a KubeadmControlPlane's Machines left during a migration, a Machine whose spec.clusterName was edited.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Cluster, Machine } from "../../../src/api/capi.ts";
import { FINALIZER, LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import { claimMachines, concernsControlPlane } from "../../../src/api/ownership.ts";
import type { QuorumControlPlane, QuorumControlPlaneStatus } from "../../../src/api/types.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import type { EtcdMember } from "../../../src/adapters/etcd/types.ts";
import { plan } from "../../../src/core/plan.ts";
import { cachedManagement } from "../../../src/controller/cached-management.ts";
import { Expectations } from "../../../src/controller/expectations.ts";
import type { ManagementApi, WorkloadAccess } from "../../../src/ports/index.ts";
import { reconcile, type ReconcilerDeps } from "../../../src/controller/reconcile.ts";
import { cluster, controlPlane, fakeEtcd, machine, ownedBy } from "./fixtures.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const AN_HOUR_AGO = "2026-11-29T11:00:00Z";

function qcp(name: string, uid: string): QuorumControlPlane {
  const base = controlPlane();
  return {
    ...base,
    metadata: { ...base.metadata, name, uid, finalizers: [FINALIZER], labels: { [LABEL_CLUSTER_NAME]: "c1" } },
  };
}

/** A Machine joined to etcd: its Node (and so its member) is named after it. */
function joined(name: string, extra: Parameters<typeof machine>[1] = {}): Machine {
  return machine(name, { node: name, ...extra });
}

interface WorldOptions {
  reconciled: QuorumControlPlane;
  machines: Machine[];
  /** etcd members by name; `dead` ones do not answer. */
  members: string[];
  dead?: string[];
  cluster?: Cluster;
}

/**
 * Caches holding the given objects, the real cachedManagement over them, and etcd/workload doubles that record every
 * call that would change something. The reconciled object remembers every member from an hour ago, so each is past
 * every grace period: a member that maps to none of its Machines would be a removable ghost.
 */
function world(options: WorldOptions) {
  const writes: string[] = [];
  const statuses: QuorumControlPlaneStatus[] = [];
  const memory = options.members.map((name, i) => ({
    id: String(i + 1),
    name,
    learner: false,
    healthy: true,
    leader: i === 0,
    firstObserved: AN_HOUR_AGO,
    startedObserved: AN_HOUR_AGO,
  }));
  const reconciled: QuorumControlPlane = { ...options.reconciled, status: { etcd: { members: memory } } };
  const theCluster = options.cluster ?? cluster();
  const byKey = new Map(options.machines.map((m) => [`ns/${m.metadata.name}`, m]));
  const inner: ManagementApi = {
    getControlPlane: async () => assert.fail("reads come from the caches"),
    getCluster: async () => assert.fail("reads come from the caches"),
    listControlPlaneMachines: async () => assert.fail("reads come from the caches"),
    getReferenced: async (ref) => assert.fail(`no template read expected (${ref.kind})`),
    createIfAbsent: async (object) => assert.fail(`no create expected (${object.kind} ${object.metadata.name})`),
    deleteMachine: async (_namespace, name) => assert.fail(`no delete expected (${name})`),
    patchAnnotations: async (_v, kind, _ns, name, annotations) =>
      assert.fail(`no annotation patch expected (${kind} ${name} ${JSON.stringify(annotations)})`),
    setOwnerReferences: async (object) => assert.fail(`no owner reference patch expected (${object.kind})`),
    // Our own Machines of an earlier release get their record of the template's keys: not what these tests are about.
    patchInPlace: async () => undefined,
    setMachineConditions: async () => undefined,
    setFinalizers: async (_object, finalizers) => {
      writes.push(`finalizers ${JSON.stringify(finalizers)}`);
      return undefined;
    },
    patchStatus: async (object, status) => {
      statuses.push(status as QuorumControlPlaneStatus);
      return object;
    },
    event: async (_object, type, reason) => {
      writes.push(`event ${type} ${reason}`);
    },
  };
  const caches = {
    controlPlane: (key: string) => (key === `ns/${reconciled.metadata.name}` ? reconciled : undefined),
    cluster: (key: string) => (key === `ns/${theCluster.metadata.name}` ? theCluster : undefined),
    machines: () => [...byKey.values()],
    machine: (key: string) => byKey.get(key),
  };
  const etcdMembers: EtcdMember[] = options.members.map((name, i) => ({
    id: String(i + 1),
    name,
    peerURLs: [`https://${name}:2380`],
    clientURLs: [`https://${name}:2379`],
    learner: false,
  }));
  const etcd = fakeEtcd(etcdMembers, { leaderId: "1", down: options.dead ?? [] });
  const workload: WorkloadAccess = {
    ensureCertificates: async () => {
      writes.push("ensureCertificates");
    },
    etcd: async () => etcd,
    nodes: async () => [],
    // A bootstrap flavour with no workload steps (the generic one).
    workloadSteps: async () => ({ steps: [] }),
    prepareWorkload: async () => assert.fail("no workload step was planned"),
    forget: async () => undefined,
  };
  const deps: ReconcilerDeps = {
    management: cachedManagement(inner, caches, new Expectations(() => NOW), `ns/${reconciled.metadata.name}`),
    workload,
    planner: plan,
    clock: () => NOW,
    log: silentLogger,
    crash: { afterAction: () => undefined },
    etcdPollIntervalMs: 10_000,
  };
  return { deps, writes, statuses, name: reconciled.metadata.name };
}

function conditionOf(status: QuorumControlPlaneStatus | undefined, type: string) {
  return status?.conditions?.find((condition) => condition.type === type);
}

describe("claimMachines, the one rule both ManagementApi implementations and reconcile use", () => {
  const ours = qcp("cp", "uid-cp");

  it("keeps a Machine only when its controller ownerRef carries this object's UID and its spec.clusterName is our Cluster", () => {
    const claims = claimMachines(
      [
        joined("cp-a"),
        joined("cp-old", { owner: ownedBy("cp", "uid-before-recreate") }),
        joined("kcp-a", {
          owner: ownedBy("cp", "uid-kcp", "KubeadmControlPlane", "controlplane.cluster.x-k8s.io/v1beta2"),
        }),
        joined("cp-moved", { clusterName: "c2" }),
        { ...joined("cp-orphan"), metadata: { ...joined("cp-orphan").metadata, ownerReferences: [] } },
      ],
      ours,
      "c1",
    );
    assert.deepEqual(
      claims.owned.map((m) => m.metadata.name),
      ["cp-a"],
    );
    assert.deepEqual(
      claims.foreign.map((f) => [f.machine.metadata.name, f.sameCluster, f.why]),
      [
        ["cp-old", true, "its controller is QuorumControlPlane ns/cp (uid uid-before-recreate)"],
        ["kcp-a", true, "its controller is KubeadmControlPlane ns/cp"],
        ["cp-moved", false, 'its spec.clusterName is "c2", not c1'],
        ["cp-orphan", true, "it has no controller ownerRef"],
      ],
    );
  });

  it("selects Machines labelled with our name and the other control-plane Machines of our Cluster, never another Cluster's", () => {
    const otherControlPlane = joined("kcp-a", {
      controlPlaneName: "kcp",
      owner: ownedBy("kcp", "uid-kcp", "KubeadmControlPlane"),
    });
    const otherCluster = joined("far-a", {
      controlPlaneName: "far",
      clusterName: "c9",
      owner: ownedBy("far", "uid-far"),
    });
    assert.deepEqual(
      [joined("cp-a"), otherControlPlane, otherCluster]
        .filter((m) => concernsControlPlane(m, "cp", "c1"))
        .map((m) => m.metadata.name),
      ["cp-a", "kcp-a"],
    );
    assert.deepEqual(
      [joined("cp-a"), otherControlPlane].filter((m) => concernsControlPlane(m, "cp")).map((m) => m.metadata.name),
      ["cp-a"],
    );
  });
});

describe("reconcile with two owners for one Cluster", () => {
  const first = ["cp-a", "cp-b", "cp-c"].map((name) => joined(name));

  it("leaves a copy-pasted second QuorumControlPlane idle beside the first one's healthy Machines, and says which one the Cluster names", async () => {
    const { deps, writes, statuses } = world({
      reconciled: qcp("cp-copy", "uid-copy"),
      machines: first,
      members: ["cp-a", "cp-b", "cp-c"],
    });
    const result = await reconcile("ns", "cp-copy", deps);
    assert.equal(result.action?.kind, "Wait");
    assert.deepEqual(writes, [], "no certificates, no Events, no change of any kind");
    const status = statuses.at(-1);
    assert.equal(status?.replicas, 0, "the first one's Machines are not counted");
    assert.deepEqual(status?.nextAction?.blockedBy, "QuorumControlPlane ns/cp");
    const condition = conditionOf(status, "OwnershipConflict");
    assert.equal(condition?.status, "True");
    assert.equal(condition?.reason, "NotReferencedByCluster");
    assert.match(
      condition?.message ?? "",
      /^Cluster ns\/c1 names QuorumControlPlane ns\/cp in spec\.controlPlaneRef, not this QuorumControlPlane: Quorum does nothing here; delete this QuorumControlPlane or point the Cluster at it/,
    );
  });

  it("removes none of the first one's members even once the copy's own Machine joined their etcd (the 4 voters -> 1 state)", async () => {
    const copy = joined("cp-copy-a", { controlPlaneName: "cp-copy", owner: ownedBy("cp-copy", "uid-copy") });
    const { deps, writes, statuses } = world({
      reconciled: qcp("cp-copy", "uid-copy"),
      machines: [...first, copy],
      members: ["cp-a", "cp-b", "cp-c", "cp-copy-a"],
    });
    const result = await reconcile("ns", "cp-copy", deps);
    assert.equal(result.action?.kind, "Wait");
    assert.deepEqual(writes, []);
    assert.equal(statuses.at(-1)?.replicas, 1);
    assert.equal(conditionOf(statuses.at(-1), "OwnershipConflict")?.reason, "NotReferencedByCluster");
  });

  it("lets a deleted copy with no Machines of its own go at once, though the first one's Machines share its Cluster", async () => {
    const deleted = qcp("cp-copy", "uid-copy");
    deleted.metadata.deletionTimestamp = "2026-11-29T11:59:00Z";
    const { deps, writes } = world({ reconciled: deleted, machines: first, members: ["cp-a", "cp-b", "cp-c"] });
    await reconcile("ns", "cp-copy", deps);
    assert.deepEqual(writes, ["finalizers []"]);
  });

  it("keeps the first one idle and healthy with no conflict while the copy waits", async () => {
    const { deps, writes, statuses } = world({
      reconciled: qcp("cp", "uid-cp"),
      machines: first,
      members: ["cp-a", "cp-b", "cp-c"],
    });
    await reconcile("ns", "cp", deps);
    assert.deepEqual(writes, ["ensureCertificates"]);
    assert.equal(statuses.at(-1)?.replicas, 3);
    assert.equal(conditionOf(statuses.at(-1), "OwnershipConflict")?.status, "False");
  });

  it("ignores and reports a Machine labelled with our name but controlled by a KubeadmControlPlane, and never removes its member as a ghost", async () => {
    // A migration from a KubeadmControlPlane of the same name: its Machine carries our control-plane-name label.
    const kcp = joined("cp-kcp-1", {
      owner: ownedBy("cp", "uid-kcp", "KubeadmControlPlane", "controlplane.cluster.x-k8s.io/v1beta2"),
    });
    const { deps, writes, statuses } = world({
      reconciled: qcp("cp", "uid-cp"),
      machines: [...first, kcp],
      members: ["cp-a", "cp-b", "cp-c", "cp-kcp-1"],
      dead: ["cp-kcp-1"],
    });
    const result = await reconcile("ns", "cp", deps);
    assert.equal(result.action?.kind, "Wait");
    assert.deepEqual(writes, ["ensureCertificates"]);
    const status = statuses.at(-1);
    assert.equal(status?.replicas, 3);
    assert.equal(status?.nextAction?.blockedBy, "KubeadmControlPlane ns/cp");
    const condition = conditionOf(status, "OwnershipConflict");
    assert.equal(condition?.reason, "ForeignMachinesInCluster");
    assert.match(condition?.message ?? "", /cp-kcp-1 \(its controller is KubeadmControlPlane ns\/cp\)/);
  });

  it("ignores a Machine with our ownerRef whose spec.clusterName is another Cluster, and reports it", async () => {
    const moved = joined("cp-moved", { clusterName: "c2" });
    const { deps, statuses } = world({
      reconciled: qcp("cp", "uid-cp"),
      machines: [...first, moved],
      members: ["cp-a", "cp-b", "cp-c"],
    });
    const result = await reconcile("ns", "cp", deps);
    assert.equal(result.action?.kind, "Wait");
    const status = statuses.at(-1);
    assert.equal(status?.replicas, 3);
    const condition = conditionOf(status, "OwnershipConflict");
    assert.equal(condition?.reason, "ForeignMachinesLabelled");
    assert.match(condition?.message ?? "", /cp-moved \(its spec\.clusterName is "c2", not c1\)/);
  });
});
