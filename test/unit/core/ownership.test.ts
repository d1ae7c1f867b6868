// Issue 12, bug 4: two owners strip each other. A second QuorumControlPlane labelled for the same Cluster (a
// copy-paste mistake, a migration from KubeadmControlPlane) saw the first one's healthy members as ghosts and removed
// them. These are the states such clusters are in; the planner must leave every one of them alone and say why.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { GROUP, KIND } from "../../../src/api/constants.ts";
import { ownershipConflict } from "../../../src/core/ownership.ts";
import { plan } from "../../../src/core/plan.ts";
import type { ForeignMachineView, Snapshot } from "../../../src/core/snapshot.ts";
import { dead, healthyMachines, machine, member, MINUTE, NOW, snapshot } from "./fixtures.ts";

const FIRST = "qcp";
const COPY = "qcp-copy";

/** The first QuorumControlPlane's Machines as the copy lists them: control-plane Machines of the same Cluster, not its own. */
function firstOnesMachines(names: string[]): ForeignMachineView[] {
  return names.map((name) => ({
    name,
    owner: `QuorumControlPlane default/${FIRST} (uid uid-first)`,
    sameCluster: true,
    why: `its controller is QuorumControlPlane default/${FIRST} (uid uid-first)`,
  }));
}

/**
 * The copy's view of a Cluster whose controlPlaneRef names the first QuorumControlPlane: the first one's three healthy
 * members (an hour old, so past every grace period) plus whatever the copy itself already made.
 */
function copysView(own: Parameters<typeof snapshot>[0] = {}): Snapshot {
  const first = healthyMachines(3);
  return snapshot({
    ...own,
    controlPlane: { name: COPY, ...own.controlPlane },
    cluster: { foreignMachines: firstOnesMachines(first.machines.map((m) => m.name)), ...own.cluster },
    members: [...first.members, ...(own.members ?? [])],
  });
}

describe("a second QuorumControlPlane labelled for a Cluster that names the first", () => {
  const cases: { name: string; view: () => Snapshot }[] = [
    {
      name: "with no Machines of its own yet (it would create the first Machine of a new etcd)",
      view: () => copysView({ machines: [] }),
    },
    {
      name: "with a Machine it made that joined the first one's etcd (the first one's members look like ghosts to it)",
      view: () => copysView({ machines: [machine("copy-1")], members: [member("copy-1")] }),
    },
    {
      name: "with a Machine of its own missing the pre-terminate hook (no hook change either)",
      view: () =>
        copysView({ machines: [machine("copy-1", { hasPreTerminateHook: false })], members: [member("copy-1")] }),
    },
    {
      name: "with a Machine of its own being deleted (its member is not removed, its hook not released)",
      view: () => copysView({ machines: [machine("copy-1", { deleting: NOW - MINUTE })], members: [member("copy-1")] }),
    },
    {
      name: "with a Machine a MachineHealthCheck asked to remediate",
      view: () =>
        copysView({ machines: [machine("copy-1", { remediationRequested: true })], members: [dead("copy-1")] }),
    },
  ];
  for (const { name, view } of cases) {
    it(`takes no step at all ${name}, and names the control plane the Cluster does name`, () => {
      const decision = plan(view());
      assert.equal(decision.action.kind, "Wait");
      assert.equal(decision.action.kind === "Wait" && decision.action.blockedBy, `QuorumControlPlane default/${FIRST}`);
      assert.equal(
        decision.action.reason,
        `Cluster default/demo names QuorumControlPlane default/${FIRST} in spec.controlPlaneRef, not this QuorumControlPlane: Quorum does nothing here; delete this QuorumControlPlane or point the Cluster at it ({apiGroup: ${GROUP}, kind: ${KIND}, name: ${COPY}})`,
      );
    });
  }

  it("once deleted, as its condition advises, still releases the hook of its own Machine whose member is gone", () => {
    const view = copysView({
      machines: [machine("copy-1", { deleting: NOW - MINUTE })],
      controlPlane: { deleting: true },
    });
    assert.deepEqual(plan(view).action, { kind: "ReleaseHook", machine: "copy-1", reason: plan(view).action.reason });
    assert.equal(
      ownershipConflict(view)?.reason,
      "NotReferencedByCluster",
      "the condition still names the other claimant",
    );
  });

  it("once deleted, removes its own Machine's member and never a member that maps to none of its Machines: it may be the first one's", () => {
    const decision = plan(
      copysView({ machines: [machine("copy-1")], members: [member("copy-1")], controlPlane: { deleting: true } }),
    );
    assert.equal(decision.action.kind, "RemoveMember");
    assert.equal(decision.action.kind === "RemoveMember" && decision.action.memberName, "copy-1");
    assert.equal(decision.action.kind === "RemoveMember" && decision.action.machine, "copy-1");
  });

  it("names a KubeadmControlPlane the Cluster still points at, as after an unfinished migration", () => {
    const view = copysView({
      machines: [],
      cluster: { controlPlaneRef: { apiGroup: GROUP, kind: "KubeadmControlPlane", name: "other" } },
    });
    const decision = plan(view);
    assert.equal(decision.action.kind === "Wait" && decision.action.blockedBy, "KubeadmControlPlane default/other");
    assert.match(
      decision.action.reason,
      /^Cluster default\/demo names KubeadmControlPlane default\/other in spec\.controlPlaneRef, not this QuorumControlPlane: Quorum does nothing here; delete this QuorumControlPlane or point the Cluster at it/,
    );
    assert.equal(ownershipConflict(view)?.reason, "NotReferencedByCluster");
  });

  it("does not take a reference to a QuorumControlPlane of another API group, or to its own name under another kind, for its own", () => {
    for (const ref of [
      { apiGroup: "controlplane.example.com", kind: KIND, name: COPY },
      { apiGroup: GROUP, kind: "KubeadmControlPlane", name: COPY },
    ]) {
      assert.equal(
        plan(copysView({ machines: [], cluster: { controlPlaneRef: ref } })).action.kind,
        "Wait",
        JSON.stringify(ref),
      );
    }
  });

  it("waits with the fix when the Cluster names no control plane at all", () => {
    const decision = plan(copysView({ machines: [], cluster: { controlPlaneRef: undefined } }));
    assert.equal(decision.action.kind === "Wait" && decision.action.blockedBy, "Cluster default/demo");
    assert.match(
      decision.action.reason,
      /Cluster default\/demo has no spec\.controlPlaneRef.*set the Cluster's spec\.controlPlaneRef to \{apiGroup: controlplane\.cluster\.x-k8s\.io, kind: QuorumControlPlane, name: qcp-copy\}/,
    );
  });
});

describe("the QuorumControlPlane the Cluster names", () => {
  it("keeps working while a copy labelled for the same Cluster waits: it scales up as asked", () => {
    const first = healthyMachines(3);
    const decision = plan(snapshot({ ...first, controlPlane: { name: FIRST, replicas: 5 } }));
    assert.equal(decision.action.kind, "CreateMachine");
  });

  it("never removes the member of another owner's Machine in its Cluster as a ghost, and names that Machine and its owner", () => {
    const own = healthyMachines(3);
    // A KubeadmControlPlane Machine left from a migration; its member is down and long past the ghost grace period.
    const kcp: ForeignMachineView = {
      name: "kcp-x7k2p",
      owner: "KubeadmControlPlane default/demo-kcp",
      sameCluster: true,
      why: "its controller is KubeadmControlPlane default/demo-kcp",
    };
    const view = snapshot({
      ...own,
      members: [
        ...own.members,
        dead("kcp-x7k2p", { peerURLs: ["https://10.9.9.9:2380"], firstObserved: NOW - 60 * MINUTE }),
      ],
      cluster: { foreignMachines: [kcp] },
    });
    const decision = plan(view);
    assert.equal(decision.action.kind, "Wait");
    assert.equal(decision.action.kind === "Wait" && decision.action.blockedBy, "KubeadmControlPlane default/demo-kcp");
    assert.match(decision.action.reason, /kcp-x7k2p \(its controller is KubeadmControlPlane default\/demo-kcp\)/);
    assert.match(decision.action.reason, /creates, removes and deletes nothing while they exist/);
    assert.equal(ownershipConflict(view)?.reason, "ForeignMachinesInCluster");
  });

  it("creates no Machine beside another owner's Machines, which would start a second etcd or a second claimant", () => {
    const own = healthyMachines(3);
    const kcp: ForeignMachineView = {
      name: "kcp-x7k2p",
      owner: "KubeadmControlPlane default/demo-kcp",
      sameCluster: true,
      why: "its controller is KubeadmControlPlane default/demo-kcp",
    };
    const decision = plan(snapshot({ ...own, controlPlane: { replicas: 5 }, cluster: { foreignMachines: [kcp] } }));
    assert.equal(decision.action.kind, "Wait");
    assert.match(decision.action.reason, /held back: CreateMachine/);
  });

  it("still puts its pre-terminate hook on its own Machines beside another owner's Machines", () => {
    const own = healthyMachines(3);
    own.machines[2] = { ...own.machines[2], hasPreTerminateHook: false };
    const kcp: ForeignMachineView = {
      name: "kcp-x7k2p",
      owner: "KubeadmControlPlane default/demo-kcp",
      sameCluster: true,
      why: "its controller is KubeadmControlPlane default/demo-kcp",
    };
    const decision = plan(snapshot({ ...own, cluster: { foreignMachines: [kcp] } }));
    assert.deepEqual(
      [decision.action.kind, "machine" in decision.action && decision.action.machine],
      ["AddHook", "m-3"],
    );
  });

  it("ignores and reports a Machine with its ownerRef but another spec.clusterName, and goes on with its own", () => {
    const own = healthyMachines(3);
    const stray: ForeignMachineView = {
      name: "m-9",
      owner: `QuorumControlPlane default/${FIRST} (uid uid-first)`,
      sameCluster: false,
      why: 'its spec.clusterName is "other", not demo',
    };
    const view = snapshot({ ...own, controlPlane: { replicas: 5 }, cluster: { foreignMachines: [stray] } });
    assert.equal(plan(view).action.kind, "CreateMachine");
    const conflict = ownershipConflict(view);
    assert.equal(conflict?.reason, "ForeignMachinesLabelled");
    assert.match(conflict?.message ?? "", /m-9 \(its spec\.clusterName is "other", not demo\)/);
  });

  it("reports no conflict when the Cluster names it and every Machine is its own", () => {
    assert.equal(ownershipConflict(snapshot(healthyMachines(3))), undefined);
  });
});
