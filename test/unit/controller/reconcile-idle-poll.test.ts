// A settled cluster (nothing to do, every member a healthy voter) is polled at --etcd-idle-poll-interval, any
// other at --etcd-poll-interval: the reconcile's requeue, with the real planner, on a healthy 3-member world and
// on the same world with one member not answering.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FINALIZER, LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import type { EtcdClusterClient, EtcdMember } from "../../../src/adapters/etcd/types.ts";
import { plan } from "../../../src/core/plan.ts";
import { reconcile, type ReconcilerDeps } from "../../../src/controller/reconcile.ts";
import type { ManagementApi, WorkloadAccess } from "../../../src/ports/index.ts";
import { cluster, controlPlane, machine } from "./fixtures.ts";

const POLL_MS = 10_000;
const IDLE_POLL_MS = 60_000;
const NOW = Date.parse("2026-12-03T12:00:00Z");

const members: EtcdMember[] = ["a", "b", "c"].map((name, i) => ({
  id: String(i + 1),
  name,
  peerURLs: [`https://127.0.1.${i + 1}:2380`],
  clientURLs: [`https://127.0.1.${i + 1}:2379`],
  learner: false,
}));

function deps(down: string | undefined, idlePollMs: number | undefined): ReconcilerDeps {
  const qcp: QuorumControlPlane = {
    ...controlPlane(),
    metadata: { ...controlPlane().metadata, finalizers: [FINALIZER], labels: { [LABEL_CLUSTER_NAME]: "c1" } },
  };
  const management: ManagementApi = {
    getControlPlane: async () => qcp,
    getCluster: async () => cluster(),
    listControlPlaneMachines: async () => members.map((member) => machine(member.name, { node: member.name })),
    getReferenced: async () => assert.fail("no template read expected"),
    createIfAbsent: async () => assert.fail("no create expected"),
    deleteMachine: async () => assert.fail("no delete expected"),
    patchAnnotations: async () => assert.fail("no annotation patch expected"),
    setOwnerReferences: async (object) => assert.fail(`no owner reference patch expected (${object.kind})`),
    patchInPlace: async () => undefined,
    setMachineConditions: async () => undefined,
    setFinalizers: async () => undefined,
    patchStatus: async () => qcp,
    event: async () => undefined,
  };
  const etcd: EtcdClusterClient = {
    listMembers: async () => members,
    memberStatuses: async () =>
      members.map((member) =>
        member.name === down
          ? {
              memberId: member.id,
              endpoint: member.clientURLs[0],
              reachable: false,
              leader: false,
              errors: ["refused"],
            }
          : {
              memberId: member.id,
              endpoint: member.clientURLs[0],
              reachable: true,
              leader: member.id === "2",
              leaderId: "2",
              raftTerm: 2,
              raftIndex: 10,
              raftAppliedIndex: 10,
              errors: [],
            },
      ),
    alarms: async () => [],
    addMember: async () => assert.fail("no member add expected"),
    promoteLearner: async () => assert.fail("no promotion expected"),
    removeMember: async () => assert.fail("no removal expected"),
    moveLeader: async () => undefined,
    close: async () => undefined,
  };
  const workload: WorkloadAccess = {
    ensureCertificates: async () => undefined,
    etcd: async () => etcd,
    // kubeadm names each member after its Node: the Machines' nodeRefs map them.
    nodes: async () =>
      members.map((member, i) => ({
        metadata: { name: member.name },
        spec: { providerID: `process://${member.name}` },
        status: {
          conditions: [{ type: "Ready", status: "True" }],
          addresses: [{ type: "InternalIP", address: `127.0.1.${i + 1}` }],
        },
      })),
    workloadSteps: async () => ({ steps: [] }),
    prepareWorkload: async () => assert.fail("no workload step was planned"),
    forget: async () => undefined,
  };
  return {
    management,
    workload,
    planner: plan,
    clock: () => NOW,
    log: silentLogger,
    crash: { afterAction: () => undefined },
    etcdPollIntervalMs: POLL_MS,
    ...(idlePollMs !== undefined ? { etcdIdlePollIntervalMs: idlePollMs } : {}),
  };
}

describe("reconcile: how soon a cluster's etcd is read again", () => {
  it("waits the idle poll interval (less up to 10 % jitter) when the cluster is settled", async () => {
    const result = await reconcile("ns", "cp", deps(undefined, IDLE_POLL_MS));
    assert.equal(result.action?.kind, "Wait");
    assert.ok(result.action?.kind === "Wait" && result.action.settled, JSON.stringify(result.action));
    const after = result.requeueAfterMs ?? 0;
    assert.ok(after > 0.89 * IDLE_POLL_MS && after <= IDLE_POLL_MS, `requeue after ${after} ms`);
  });

  it("keeps the short poll interval while a member does not answer, though there is nothing to do", async () => {
    const result = await reconcile("ns", "cp", deps("c", IDLE_POLL_MS));
    assert.equal(result.action?.kind, "Wait", JSON.stringify(result.action));
    assert.ok(!(result.action?.kind === "Wait" && result.action.settled), JSON.stringify(result.action));
    assert.ok((result.requeueAfterMs ?? Infinity) <= POLL_MS, `requeue after ${result.requeueAfterMs} ms`);
  });

  it("polls a settled cluster at the one interval when no idle interval is given", async () => {
    const result = await reconcile("ns", "cp", deps(undefined, undefined));
    assert.ok((result.requeueAfterMs ?? Infinity) <= POLL_MS, `requeue after ${result.requeueAfterMs} ms`);
  });
});
