import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FINALIZER, LABEL_CLUSTER_NAME } from "../../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { EtcdOperationError } from "../../../src/adapters/errors.ts";
import { silentLogger } from "../../../src/adapters/kube/log.ts";
import { plan } from "../../../src/core/plan.ts";
import { reconcile, ReconcileError, REFUSAL_BACKOFF, type ReconcilerDeps } from "../../../src/controller/reconcile.ts";
import { EtcdRetryLaterError, type WorkloadAccess } from "../../../src/ports/index.ts";
import { controlPlane, etcdMembers, fakeEtcd, fakeManagement, machine } from "./fixtures.ts";

const members = etcdMembers(["a", "b", "c"]);

const NOW = Date.parse("2026-11-29T12:00:00Z");

/** A removal refused for now, as the etcd adapter reports etcd's "unhealthy cluster". */
function removalWindowRefusal(): EtcdRetryLaterError {
  return new EtcdRetryLaterError(
    "member remove 1 via https://127.0.1.2:2379",
    "removal-window",
    1_000,
    "14 UNAVAILABLE: etcdserver: unhealthy cluster",
  );
}

/** A status whose Reconciled condition says the removal has been deferred since `sinceMs` before NOW. */
function deferredFor(sinceMs: number): QuorumControlPlane["status"] {
  return {
    conditions: [
      {
        type: "Reconciled",
        status: "False",
        reason: "RemoveMemberDeferred",
        message: "RemoveMember deferred",
        lastTransitionTime: new Date(NOW - sinceMs).toISOString(),
      },
    ],
  };
}

function world(removeError: Error, status?: QuorumControlPlane["status"]) {
  const events: string[] = [];
  const statuses: Record<string, unknown>[] = [];
  const qcp: QuorumControlPlane = {
    ...controlPlane(),
    metadata: { ...controlPlane().metadata, finalizers: [FINALIZER], labels: { [LABEL_CLUSTER_NAME]: "c1" } },
    ...(status ? { status } : {}),
  };
  const management = fakeManagement(qcp, () => members.map((member) => machine(member.name, { node: member.name })), {
    patchStatus: async (_object, status) => {
      statuses.push(status);
      return qcp;
    },
    event: async (_object, type, reason) => {
      events.push(`${type} ${reason}`);
    },
    // The record of the removal on Machine a (MEMBER_REMOVED_ANNOTATION), written before etcd is asked.
    patchAnnotations: async () => undefined,
  });
  const etcd = fakeEtcd(
    members,
    { leaderId: "2" },
    {
      removeMember: async () => {
        throw removeError;
      },
      moveLeader: async () => undefined,
    },
  );
  const workload: WorkloadAccess = {
    ensureCertificates: async () => undefined,
    etcd: async () => etcd,
    nodes: async () => [],
    // A bootstrap flavour with no workload steps (the generic one).
    workloadSteps: async () => ({ steps: [] }),
    prepareWorkload: async () => assert.fail("no workload step was planned"),
    forget: async () => undefined,
  };
  const deps: ReconcilerDeps = {
    management,
    workload,
    // The real assessment, with the one step under test forced: remove member a (not the leader).
    planner: (snapshot) => ({
      ...plan(snapshot),
      action: { kind: "RemoveMember", memberId: "1", memberName: "a", machine: "a", reason: "scale down" },
    }),
    clock: () => NOW,
    log: silentLogger,
    crash: { afterAction: () => undefined },
    etcdPollIntervalMs: 1_000,
  };
  return { deps, events, statuses };
}

describe("reconcile when etcd refuses a member removal", () => {
  it("asks again within a second and says why in status, without a failure Event, when etcd first says the removal must wait", async () => {
    const { deps, events, statuses } = world(removalWindowRefusal());
    const result = await reconcile("ns", "cp", deps);
    assert.equal(result.requeueAfterMs, 1_000);
    assert.deepEqual(events, []);
    const written = JSON.stringify(statuses.at(-1));
    assert.match(written, /RemoveMemberDeferred/);
    assert.match(written, /unhealthy cluster/);
  });

  it("records the refusal on the member's status entry, so that the planner asks early only once (removalMayBeOpen)", async () => {
    const { deps, statuses } = world(removalWindowRefusal());
    await reconcile("ns", "cp", deps);
    const written = statuses.at(-1) as { etcd?: { members?: { id: string; removalRefused?: string }[] } };
    const refused = written.etcd?.members?.filter((member) => member.removalRefused !== undefined);
    assert.deepEqual(refused, [{ ...refused?.[0], id: "1", removalRefused: new Date(NOW).toISOString() }]);
    // Another refusal (not etcd's removal window) records nothing.
    const other = world(new EtcdRetryLaterError("member remove 1", "no-leader", 1_000, "etcdserver: no leader"));
    await reconcile("ns", "cp", other.deps);
    const members = (other.statuses.at(-1) as { etcd?: { members?: { removalRefused?: string }[] } }).etcd?.members;
    assert.ok(members?.every((member) => member.removalRefused === undefined));
  });

  it("backs off while etcd keeps refusing: as long as the refusals have lasted, never longer than 30 s", async () => {
    for (const [since, expected] of [
      [500, 1_000],
      [4_000, 4_000],
      [16_000, 16_000],
      [600_000, REFUSAL_BACKOFF.maxMs],
    ] as const) {
      const { deps, events } = world(removalWindowRefusal(), deferredFor(since));
      const result = await reconcile("ns", "cp", deps);
      assert.equal(result.requeueAfterMs, expected, `deferred for ${since} ms`);
      assert.deepEqual(events, []);
    }
  });

  it("starts the backoff over when the last reconcile was not deferred by etcd", async () => {
    const status = deferredFor(600_000);
    status!.conditions![0].reason = "RemoveMemberFailed";
    const { deps } = world(removalWindowRefusal(), status);
    assert.equal((await reconcile("ns", "cp", deps)).requeueAfterMs, REFUSAL_BACKOFF.firstMs);
  });

  it("still reports any other refusal as a failed removal, with a Warning Event and the queue's backoff", async () => {
    const refusal = new EtcdOperationError(
      "member remove 1",
      "https://127.0.1.2:2379",
      "7 PERMISSION_DENIED: etcdserver: permission denied",
      "check the client certificate",
    );
    const { deps, events } = world(refusal);
    await assert.rejects(
      reconcile("ns", "cp", deps),
      (error: unknown) => error instanceof ReconcileError && error.reason === "RemoveMemberFailed",
    );
    assert.deepEqual(events, ["Warning RemoveMemberFailed"]);
  });
});

describe("reconcile writes the status it observed whatever the action met", () => {
  it("writes the observed member list and quorum with the failure as the Reconciled condition when the action fails", async () => {
    const { deps, statuses } = world(new Error("connection reset"));
    await assert.rejects(reconcile("ns", "cp", deps), ReconcileError);
    const written = statuses.at(-1) as {
      etcd?: { members?: unknown[]; quorum?: { voters: number } };
      conditions?: { type: string; status: string; reason: string }[];
    };
    assert.equal(written.etcd?.members?.length, 3);
    assert.equal(written.etcd?.quorum?.voters, 3);
    assert.ok(
      written.conditions?.some(
        (condition) =>
          condition.type === "Reconciled" && condition.status === "False" && condition.reason === "RemoveMemberFailed",
      ),
    );
  });

  it("writes the observed status and looks again soon when the action meets a conflict", async () => {
    const conflict = Object.assign(new Error("the object has been modified"), { code: 409 });
    const { deps, statuses } = world(conflict);
    const result = await reconcile("ns", "cp", deps);
    assert.equal(result.requeueAfterMs, 250);
    const written = statuses.at(-1) as { etcd?: { members?: unknown[] }; nextAction?: { kind: string } };
    assert.equal(written.etcd?.members?.length, 3);
    assert.equal(written.nextAction?.kind, "RemoveMember");
  });
});
