// A settled cluster (nothing to do, every member a healthy voter) is polled at --etcd-idle-poll-interval, any
// other at --etcd-poll-interval: the reconcile's requeue, with the real planner, on a healthy 3-member world and
// on the same world with one member not answering.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FINALIZER, LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import { DEFAULT_ETCD_IDLE_POLL_SECONDS } from "../../../src/flags.ts";
import { plan } from "../../../src/core/plan.ts";
import { reconcile, type ReconcilerDeps } from "../../../src/controller/reconcile.ts";
import type { WorkloadAccess } from "../../../src/ports/index.ts";
import { controlPlane, etcdMembers, fakeEtcd, fakeManagement, machine } from "./fixtures.ts";

const POLL_MS = 10_000;
// The default, longer than the planner's one-minute idle recheck, which must not cut it short.
const IDLE_POLL_MS = DEFAULT_ETCD_IDLE_POLL_SECONDS * 1000;
const NOW = Date.parse("2026-12-03T12:00:00Z");

const members = etcdMembers(["a", "b", "c"]);

function deps(down: string | undefined, idlePollMs: number | undefined): ReconcilerDeps {
  const qcp: QuorumControlPlane = {
    ...controlPlane(),
    metadata: { ...controlPlane().metadata, finalizers: [FINALIZER], labels: { [LABEL_CLUSTER_NAME]: "c1" } },
  };
  const management = fakeManagement(qcp, () => members.map((member) => machine(member.name, { node: member.name })));
  const etcd = fakeEtcd(members, { leaderId: "2", ...(down ? { down: [down] } : {}) });
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

  it("waits a long idle poll interval whole, beyond the planner's one-minute idle recheck", async () => {
    const fiveMinutes = 300_000;
    const result = await reconcile("ns", "cp", deps(undefined, fiveMinutes));
    const after = result.requeueAfterMs ?? 0;
    assert.ok(after > 0.89 * fiveMinutes && after <= fiveMinutes, `requeue after ${after} ms`);
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
