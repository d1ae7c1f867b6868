// The informer caches keep only what the controller reads (issue 19). Two ways this could go wrong, each checked on
// objects as a management cluster really serves them: a field the controller reads is dropped (the kept object then
// differs from the one it stands for), or the controller decides or writes differently on the kept objects than on
// whole ones (the reconcile is run on both and every call it makes is compared).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Cluster, Machine } from "../../../src/api/capi.ts";
import { FINALIZER, LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import type { KubeObject } from "../../../src/adapters/kube/rest.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import { plan } from "../../../src/core/plan.ts";
import { LAST_APPLIED_ANNOTATION } from "../../../src/controller/cached-fields.ts";
import { quorumController } from "../../../src/controller/controller.ts";
import { reconcile, type ReconcilerDeps } from "../../../src/controller/reconcile.ts";
import { machineTemplateHash } from "../../../src/controller/snapshot-builder.ts";
import type { ManagementApi, WorkloadAccess } from "../../../src/ports/index.ts";
import { cluster, controlPlane, etcdMembers, fakeEtcd, machine } from "./fixtures.ts";
import { fullCluster, fullControlPlane, fullMachine, realisticCluster, realisticMachine } from "./full-objects.ts";

const NOW = Date.parse("2026-12-03T12:00:00Z");

/** The transforms the controller hands the Manager for each watched resource, by plural. */
function transforms(): Record<string, (obj: KubeObject) => KubeObject | undefined> {
  const controller = quorumController({ deps: { clock: () => NOW } as ReconcilerDeps });
  return Object.fromEntries(
    controller.watches.map((watch) => {
      assert.ok(watch.transform, `the watch of ${watch.target.resource.plural} keeps only what the controller reads`);
      return [watch.target.resource.plural, watch.transform];
    }),
  );
}

const trim = transforms();
const cachedMachine = (object: Machine) => trim.machines(object as unknown as KubeObject) as unknown as Machine;
const cachedCluster = (object: Cluster) => trim.clusters(object as unknown as KubeObject) as unknown as Cluster;
const cachedControlPlane = (object: QuorumControlPlane) =>
  trim.quorumcontrolplanes(object as unknown as KubeObject) as unknown as QuorumControlPlane;

function settledControlPlane(overrides: Partial<QuorumControlPlane["spec"]> = {}): QuorumControlPlane {
  const qcp = controlPlane(overrides);
  return {
    ...qcp,
    metadata: {
      ...qcp.metadata,
      resourceVersion: "48350",
      creationTimestamp: "2026-11-29T10:00:00Z",
      finalizers: [FINALIZER],
      labels: { [LABEL_CLUSTER_NAME]: "c1" },
      annotations: { "team.example.com/owner": "platform" },
    },
  };
}

/** Up to date with `qcp`'s template: nothing to roll out. */
const machines = (qcp = settledControlPlane()) =>
  ["a", "b", "c"].map((name) => realisticMachine(machine(name, { node: name, hash: machineTemplateHash(qcp) })));

describe("the informer caches", () => {
  it("keep every field of a Machine the controller reads and drop what CAPI adds besides", () => {
    const variants = [
      realisticMachine(machine("a", { node: "a" })),
      realisticMachine(machine("b", { deleting: "2026-12-03T11:00:00Z", ownerRemediated: "False" })),
      realisticMachine(machine("c")),
    ];
    for (const variant of variants) {
      const served = fullMachine(variant);
      assert.notDeepEqual(served, variant);
      assert.deepEqual(cachedMachine(served), variant);
    }
  });

  it("keep every field of a Cluster the controller reads and drop the topology's variables and the rest", () => {
    const variant = realisticCluster(cluster());
    assert.deepEqual(cachedCluster(fullCluster(variant)), variant);
  });

  it("keep a QuorumControlPlane's spec and status whole, without managedFields and kubectl's last-applied copy", () => {
    const qcp: QuorumControlPlane = {
      ...settledControlPlane(),
      status: {
        observedGeneration: 2,
        replicas: 3,
        etcd: { summary: "3/3" },
        nextAction: { kind: "Wait", message: "m" },
      },
    };
    const served = fullControlPlane(qcp);
    assert.ok(served.metadata.annotations?.[LAST_APPLIED_ANNOTATION]);
    assert.deepEqual(cachedControlPlane(served), qcp);
  });

  it("keep a list's objects in the order and with the keys the API server sent (lists are compared as JSON)", () => {
    const taints = [{ propagation: "Always" as const, effect: "NoSchedule" as const, key: "k", value: "v" }];
    const served = withTaints(realisticMachine(machine("a")), taints);
    assert.equal(
      JSON.stringify(cachedMachine(served).spec.taints),
      JSON.stringify(taints),
      "the cached taints serialise as served",
    );
  });
});

function withTaints(object: Machine, taints: NonNullable<Machine["spec"]["taints"]>): Machine {
  return { ...object, spec: { ...object.spec, taints } };
}

interface World {
  qcp: QuorumControlPlane;
  cluster: Cluster;
  machines: Machine[];
  /** etcd members by Machine name; all healthy voters. */
  members: string[];
}

/** Every call the reconcile makes, as text, and what it returns. */
async function recordReconcile(world: World): Promise<string[]> {
  const calls: string[] = [];
  const record = (call: string, ...args: unknown[]) => calls.push(`${call} ${JSON.stringify(args)}`);
  const management: ManagementApi = {
    getControlPlane: async () => world.qcp,
    getCluster: async () => world.cluster,
    listControlPlaneMachines: async () => world.machines,
    getReferenced: async (ref) => assert.fail(`no template read expected (${ref.kind})`),
    createIfAbsent: async (object) => {
      record("createIfAbsent", object);
      return "created";
    },
    deleteMachine: async (namespace, name) => void record("deleteMachine", namespace, name),
    patchAnnotations: async (...args) => {
      record("patchAnnotations", ...args);
      return "48400";
    },
    setOwnerReferences: async (object, references) => void record("setOwnerReferences", object, references),
    patchInPlace: async (...args) => {
      record("patchInPlace", ...args);
      return "48401";
    },
    setMachineConditions: async (...args) => {
      record("setMachineConditions", ...args);
      return "48402";
    },
    setFinalizers: async (object, finalizers) => {
      record("setFinalizers", object.metadata.resourceVersion, finalizers);
      return "48403";
    },
    patchStatus: async (object, status) => {
      record("patchStatus", object.metadata.resourceVersion, status);
      return object;
    },
    event: async (_object, type, reason, message) => void record("event", type, reason, message),
  };
  const members = etcdMembers(world.members);
  const etcd = fakeEtcd(
    members,
    { leaderId: "1" },
    {
      removeMember: async (id) => {
        record("removeMember", id);
        return { removed: true };
      },
      moveLeader: async (id) => void record("moveLeader", id),
    },
  );
  const workload: WorkloadAccess = {
    ensureCertificates: async () => void record("ensureCertificates"),
    etcd: async (_qcp, _cluster, endpoints) => {
      record("etcd", endpoints);
      return etcd;
    },
    nodes: async () =>
      world.members.map((name, i) => ({
        metadata: { name },
        status: {
          conditions: [{ type: "Ready", status: "True" }],
          addresses: [{ type: "InternalIP", address: `127.0.1.${i + 1}` }],
        },
      })),
    workloadSteps: async () => ({ steps: [] }),
    prepareWorkload: async () => assert.fail("no workload step was planned"),
    forget: async (...args) => void record("forget", ...args),
  };
  const deps: ReconcilerDeps = {
    management,
    workload,
    planner: plan,
    clock: () => NOW,
    log: silentLogger,
    crash: { afterAction: () => undefined },
    etcdPollIntervalMs: 10_000,
  };
  const result = await reconcile("ns", "cp", deps);
  record("result", result.action ?? null, result.requeueAfterMs !== undefined);
  return calls;
}

/** The same world twice: as served (whole objects) and as the caches keep it. */
async function sameOutcome(world: World): Promise<string[]> {
  const served: World = {
    ...world,
    qcp: fullControlPlane(world.qcp),
    cluster: fullCluster(world.cluster),
    machines: world.machines.map(fullMachine),
  };
  const cached: World = {
    ...world,
    qcp: cachedControlPlane(served.qcp),
    cluster: cachedCluster(served.cluster),
    machines: served.machines.map(cachedMachine),
  };
  const onServed = await recordReconcile(served);
  const onCached = await recordReconcile(cached);
  assert.deepEqual(onCached, onServed);
  return onServed;
}

describe("a reconcile on the cached objects", () => {
  const cases: { name: string; world: () => World; acts: RegExp }[] = [
    {
      name: "settles a healthy control plane exactly as on whole objects",
      world: () => ({
        qcp: settledControlPlane(),
        cluster: realisticCluster(cluster()),
        machines: machines(),
        members: ["a", "b", "c"],
      }),
      acts: /patchStatus/,
    },
    {
      name: "scales down exactly as on whole objects",
      world: () => ({
        qcp: settledControlPlane({ replicas: 1 }),
        cluster: realisticCluster(cluster()),
        machines: machines(),
        members: ["a", "b", "c"],
      }),
      acts: /moveLeader|removeMember|deleteMachine/,
    },
    {
      name: "remediates a Machine a MachineHealthCheck marked exactly as on whole objects",
      world: () => ({
        qcp: settledControlPlane(),
        cluster: realisticCluster(cluster()),
        machines: [
          ...machines().slice(0, 2),
          realisticMachine(
            machine("c", { node: "c", hash: machineTemplateHash(settledControlPlane()), ownerRemediated: "False" }),
          ),
        ],
        members: ["a", "b", "c"],
      }),
      acts: /removeMember|deleteMachine|moveLeader|Remediat/,
    },
    {
      name: "updates the Machines' labels in place exactly as on whole objects",
      world: () => ({
        qcp: settledControlPlane({
          machineTemplate: { ...controlPlane().spec.machineTemplate, metadata: { labels: { tier: "gold" } } },
        }),
        cluster: realisticCluster(cluster()),
        machines: machines(),
        members: ["a", "b", "c"],
      }),
      acts: /patchInPlace/,
    },
    {
      name: "waits on a paused Cluster exactly as on whole objects",
      world: () => {
        const paused = realisticCluster(cluster());
        return {
          qcp: settledControlPlane(),
          cluster: { ...paused, spec: { ...paused.spec, paused: true } },
          machines: machines(),
          members: ["a", "b", "c"],
        };
      },
      acts: /Paused|paused/,
    },
    {
      name: "releases the hook of a Machine being deleted exactly as on whole objects",
      world: () => ({
        qcp: settledControlPlane(),
        cluster: realisticCluster(cluster()),
        machines: [
          ...machines(),
          realisticMachine(
            machine("d", {
              node: "d",
              hash: machineTemplateHash(settledControlPlane()),
              deleting: "2026-12-03T11:59:00Z",
            }),
          ),
        ],
        members: ["a", "b", "c"],
      }),
      acts: /patchAnnotations/,
    },
    {
      name: "deletes a QuorumControlPlane being deleted exactly as on whole objects",
      world: () => {
        const qcp = settledControlPlane();
        return {
          qcp: { ...qcp, metadata: { ...qcp.metadata, deletionTimestamp: "2026-12-03T11:59:00Z" } },
          cluster: realisticCluster(cluster()),
          machines: machines(),
          members: ["a", "b", "c"],
        };
      },
      acts: /removeMember|deleteMachine|moveLeader|patchAnnotations/,
    },
  ];
  for (const { name, world, acts } of cases) {
    it(name, async () => {
      const calls = await sameOutcome(world());
      // A case in which the reconcile does nothing would compare nothing.
      assert.match(calls.join("\n"), acts);
    });
  }
});
