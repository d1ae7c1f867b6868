// `quorum status` rendering: what a user sees for the states an etcd control plane goes through. The renderer
// is pure, so each case is a status as the controller writes it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { renderStatus } from "../../../src/cli/status.ts";
import type {
  Condition,
  EtcdMemberStatus,
  QuorumControlPlane,
  QuorumControlPlaneStatus,
} from "../../../src/api/types.ts";

const now = new Date("2026-03-01T10:00:30Z");

function condition(type: string, status: Condition["status"], reason: string, message = ""): Condition {
  return { type, status, reason, message, lastTransitionTime: "2026-03-01T09:00:00Z" };
}

function member(name: string, overrides: Partial<EtcdMemberStatus> = {}): EtcdMemberStatus {
  return {
    id: `${name}-id`,
    name,
    machine: name,
    node: name,
    learner: false,
    healthy: true,
    leader: false,
    state: "voter",
    ...overrides,
  };
}

function controlPlane(status: QuorumControlPlaneStatus | undefined, replicas = 3): QuorumControlPlane {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
    kind: "QuorumControlPlane",
    metadata: { name: "prod-cp", namespace: "team-a", labels: { "cluster.x-k8s.io/cluster-name": "prod" } },
    spec: {
      replicas,
      version: "v1.33.2",
      machineTemplate: {
        spec: {
          infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "ProcessMachineTemplate", name: "t" },
          bootstrapConfigTemplateRef: {
            apiGroup: "bootstrap.cluster.x-k8s.io",
            kind: "ProcessBootstrapConfigTemplate",
            name: "t",
          },
        },
      },
    },
    ...(status ? { status } : {}),
  };
}

/** The table row (split into cells) whose first cell is `machine`. */
function row(output: string, machine: string): string[] {
  const line = output.split("\n").find((text) => text.split(/\s{2,}/)[0] === machine);
  assert.ok(line, `no row for ${machine} in:\n${output}`);
  return line.split(/\s{2,}/);
}

const healthy: QuorumControlPlaneStatus = {
  replicas: 3,
  readyReplicas: 3,
  upToDateReplicas: 3,
  etcd: {
    members: [member("prod-cp-b"), member("prod-cp-a", { leader: true, state: "leader" }), member("prod-cp-c")],
    quorum: { voters: 3, healthyVoters: 3, quorumSize: 2, failuresTolerated: 1 },
    lastObserved: "2026-03-01T10:00:18Z",
  },
  nextAction: { kind: "Wait", message: "nothing to do: 3 of 3 Machines up to date, etcd healthy" },
  conditions: [condition("EtcdClusterHealthy", "True", "Healthy"), condition("Available", "True", "Available")],
};

describe("quorum status", () => {
  test("a healthy control plane shows every Machine with its member and Node, the leader, and the quorum", () => {
    const output = renderStatus(controlPlane(healthy), { now });
    assert.match(output, /^QuorumControlPlane team-a\/prod-cp \(Cluster prod\), Kubernetes v1\.33\.2$/m);
    assert.match(output, /^Machines: 3 of 3 desired, 3 ready, 3 up to date$/m);
    assert.match(
      output,
      /^etcd: 3 of 3 voters healthy, quorum 2, tolerates 1 failure; member list last changed 2026-03-01T10:00:18Z \(12s ago\)$/m,
    );
    assert.deepEqual(row(output, "prod-cp-a"), [
      "prod-cp-a",
      "prod-cp-a",
      "prod-cp-a",
      "prod-cp-a-id",
      "leader",
      "healthy",
      "leader",
    ]);
    assert.deepEqual(row(output, "prod-cp-b").slice(4, 6), ["voter", "healthy"]);
    const machinesInOrder = output
      .split("\n")
      .filter((line) => line.startsWith("prod-cp-"))
      .map((line) => line.split(/\s+/)[0]);
    assert.deepEqual(machinesInOrder, ["prod-cp-a", "prod-cp-b", "prod-cp-c"], "rows are sorted by Machine");
    assert.match(output, /^Next \(Wait\): nothing to do/m);
  });

  test("a ghost member is listed without a Machine, by name, with why it blocks", () => {
    const status: QuorumControlPlaneStatus = {
      ...healthy,
      etcd: {
        members: [
          member("prod-cp-a", { leader: true, state: "leader" }),
          member("prod-cp-b"),
          member("prod-cp-c"),
          {
            id: "9f1c",
            name: "old-node-7",
            learner: false,
            healthy: false,
            leader: false,
            state: "ghost: maps to no Machine for 6m",
            error: "connection refused",
          },
        ],
        quorum: { voters: 4, healthyVoters: 3, quorumSize: 3, failuresTolerated: 0 },
        lastObserved: "2026-03-01T10:00:25Z",
      },
      nextAction: {
        kind: "RemoveGhost",
        target: "old-node-7",
        message: "remove ghost member old-node-7: it maps to no Machine and does not answer",
      },
    };
    const output = renderStatus(controlPlane(status), { now });
    assert.deepEqual(row(output, "-"), [
      "-",
      "-",
      "old-node-7",
      "9f1c",
      "voter",
      "UNHEALTHY",
      "ghost: maps to no Machine for 6m; error: connection refused",
    ]);
    assert.match(output, /tolerates NO further failure/);
    assert.match(output, /1 member maps to no Machine/);
    assert.match(output, /^Next \(RemoveGhost old-node-7\): remove ghost member old-node-7/m);
    const lines = output.split("\n");
    assert.ok(
      lines.findIndex((line) => line.startsWith("old-node-7") || line.startsWith("- ")) >
        lines.findIndex((line) => line.startsWith("prod-cp-c")),
      "the ghost comes after the mapped members",
    );
  });

  test("a joining learner shows as a learner with its catch-up progress, and the wait says what it waits for", () => {
    const status: QuorumControlPlaneStatus = {
      ...healthy,
      replicas: 4,
      etcd: {
        members: [
          ...healthy.etcd!.members!,
          member("prod-cp-d", { learner: true, healthy: true, state: "learner, 84% caught up" }),
        ],
        quorum: { voters: 3, healthyVoters: 3, quorumSize: 2, failuresTolerated: 1 },
        lastObserved: "2026-03-01T10:00:29Z",
      },
      nextAction: {
        kind: "Wait",
        message: "wait: new member prod-cp-d is a learner, 84% caught up",
        blockedBy: "learner prod-cp-d has not caught up",
      },
    };
    const output = renderStatus(controlPlane(status), { now });
    assert.deepEqual(row(output, "prod-cp-d").slice(4), ["learner", "healthy", "learner, 84% caught up"]);
    assert.match(output, /^Blocked by: learner prod-cp-d has not caught up$/m);
    assert.match(output, /^Machines: 4 of 3 desired/m);
  });

  test("a dead member is flagged UNHEALTHY with its error and the lost failure tolerance", () => {
    const status: QuorumControlPlaneStatus = {
      ...healthy,
      readyReplicas: 2,
      unavailableReplicas: 1,
      etcd: {
        members: [
          member("prod-cp-a", { leader: true, state: "leader" }),
          member("prod-cp-b"),
          member("prod-cp-c", { healthy: false, state: "voter", error: "context deadline exceeded" }),
        ],
        quorum: { voters: 3, healthyVoters: 2, quorumSize: 2, failuresTolerated: 0 },
        lastObserved: "2026-03-01T10:00:20Z",
      },
      nextAction: {
        kind: "Remediate",
        target: "prod-cp-c",
        message: "replace machine prod-cp-c: its member has not answered for 5m",
      },
      conditions: [
        condition("EtcdClusterHealthy", "False", "MemberUnhealthy", "member prod-cp-c does not answer"),
        condition("Available", "True", "Available"),
      ],
    };
    const output = renderStatus(controlPlane(status), { now });
    assert.deepEqual(row(output, "prod-cp-c").slice(4), [
      "voter",
      "UNHEALTHY",
      "voter; error: context deadline exceeded",
    ]);
    assert.match(output, /^etcd: 2 of 3 voters healthy, quorum 2, tolerates NO further failure/m);
    assert.match(output, /^Machines: 3 of 3 desired, 2 ready, 3 up to date, 1 unavailable$/m);
    assert.match(output, /^EtcdClusterHealthy\s+False\s+MemberUnhealthy\s+member prod-cp-c does not answer$/m);
    const conditionOrder = output
      .split("\n")
      .filter((line) => /^(Available|EtcdClusterHealthy)\s/.test(line))
      .map((line) => line.split(/\s+/)[0]);
    assert.deepEqual(
      conditionOrder,
      ["Available", "EtcdClusterHealthy"],
      "Available is listed first whatever the order in status",
    );
  });

  test("a control plane with fewer healthy voters than its quorum is reported as having lost quorum", () => {
    const status: QuorumControlPlaneStatus = {
      ...healthy,
      etcd: {
        members: [
          member("prod-cp-a", { leader: true, state: "leader" }),
          member("prod-cp-b", { healthy: false }),
          member("prod-cp-c", { healthy: false }),
        ],
        quorum: { voters: 3, healthyVoters: 1, quorumSize: 2, failuresTolerated: 0 },
        lastObserved: "2026-03-01T10:00:20Z",
      },
    };
    assert.match(
      renderStatus(controlPlane(status), { now }),
      /^etcd: 1 of 3 voters healthy, quorum 2, QUORUM LOST: etcd accepts no writes/m,
    );
  });

  test("when etcd cannot be reached the output says so, with the condition's reason and how stale the last reading is", () => {
    const status: QuorumControlPlaneStatus = {
      replicas: 3,
      readyReplicas: 0,
      etcd: { members: [], lastObserved: "2026-03-01T09:40:00Z" },
      nextAction: {
        kind: "Wait",
        message: "wait: etcd does not answer on any of 3 endpoints",
        blockedBy: "etcd unreachable",
      },
      conditions: [
        condition(
          "EtcdClusterHealthy",
          "Unknown",
          "EtcdUnreachable",
          "no member answered within 2s: dial tcp 10.0.0.4:2379: connect: connection refused",
        ),
      ],
    };
    const output = renderStatus(controlPlane(status), { now });
    assert.match(
      output,
      /^etcd: no quorum figures in status; member list last changed 2026-03-01T09:40:00Z \(20m ago\)$/m,
    );
    assert.match(output, /^No etcd members in status/m);
    assert.match(output, /^ {2}EtcdUnreachable: no member answered within 2s: dial tcp 10\.0\.0\.4:2379/m);
    assert.match(output, /^Blocked by: etcd unreachable$/m);
    assert.doesNotMatch(output, /^MACHINE/m, "no empty member table");
  });

  test("an object the controller has not reconciled yet says so and where to look", () => {
    const output = renderStatus(controlPlane(undefined), { now });
    assert.match(output, /No status yet: the controller has not reconciled this object/);
    assert.match(output, /quorum-controller-manager/);
  });
});
