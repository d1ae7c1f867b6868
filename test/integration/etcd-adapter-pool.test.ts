// The etcd client the controller keeps per workload cluster between reconciles (ClusterWorkloadAccess.etcd,
// pooled), against a real 3-member TLS etcd on loopback. Each "round" is what one reconcile does: etcd(),
// observeEtcd() (member list, every member's status, alarms), close(). A kept client must not let a member
// that died, froze or came back make any later round slower or wrong than a fresh client would.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Cluster } from "../../src/api/capi.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import type { EtcdClientOptions } from "../../src/adapters/etcd/types.ts";
import { observeEtcd } from "../../src/controller/etcd-view.ts";
import { silentLogger } from "../../src/adapters/kube/log.ts";
import { ClusterWorkloadAccess } from "../../src/adapters/workload/access.ts";
import { eventually, startEtcdCluster, type EtcdCluster, type EtcdMember } from "../env/index.ts";
import { MemorySecretStore } from "../unit/adapters/memory-secret-store.ts";

// Long enough for a healthy member on a loaded 2-core machine, short enough to keep the suite quick.
const deadlineMs = 2000;

const controlPlane = {
  apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
  kind: "QuorumControlPlane",
  metadata: { name: "wl-cp", namespace: "default", uid: "00000000-0000-4000-8000-00000000b001" },
  spec: {
    version: "v1.31.0",
    machineTemplate: {
      spec: {
        infrastructureRef: { kind: "X", name: "x" },
        bootstrapConfigTemplateRef: { kind: "Y", name: "y" },
      },
    },
  },
} as QuorumControlPlane;
const workloadCluster: Cluster = { metadata: { name: "wl", namespace: "default" }, spec: {} };

let cluster: EtcdCluster;
let access: ClusterWorkloadAccess;
/** Every etcd client the access opened (not leases: real clients, each with its own connections). */
const opened: EtcdClientOptions[] = [];

interface Round {
  ms: number;
  unreachable: string[];
  memberCount: number;
}

/** One reconcile's look at etcd, through the kept client. */
async function round(): Promise<Round> {
  const started = performance.now();
  const etcd = await access.etcd(controlPlane, workloadCluster, cluster.endpoints());
  try {
    const observed = await observeEtcd(etcd);
    const ms = performance.now() - started;
    assert.ok(observed.ok, observed.ok ? "" : observed.error);
    const { statuses, members } = observed.observation;
    const unreachable = statuses
      .filter((status) => !status.reachable)
      .map((status) => members.find((member) => member.id === status.memberId)?.name ?? status.memberId);
    return { ms, unreachable, memberCount: members.length };
  } finally {
    await etcd.close();
  }
}

/** A member that does not lead, so stopping it starts no election. */
async function follower(): Promise<EtcdMember> {
  const etcd = await access.etcd(controlPlane, workloadCluster, cluster.endpoints());
  try {
    const members = await etcd.listMembers();
    const status = (await etcd.memberStatuses(members)).find((candidate) => candidate.reachable && !candidate.leader);
    const member = members.find((candidate) => candidate.id === status?.memberId);
    const found = cluster.members.find((candidate) => member?.peerURLs.includes(candidate.peerURL));
    assert.ok(found, "no reachable follower to stop");
    return found;
  } finally {
    await etcd.close();
  }
}

before(async () => {
  cluster = await startEtcdCluster({ members: 3, tls: true, namePrefix: "p" });
  const ca = cluster.ca;
  assert.ok(ca);
  const store = new MemorySecretStore();
  store.seed("default", "wl-etcd", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
  access = new ClusterWorkloadAccess({
    secrets: store,
    etcdCallDeadlineMs: deadlineMs,
    log: silentLogger,
    etcdClientFactory: (options) => {
      opened.push(options);
      return createEtcdClusterClient(options);
    },
  });
});

after(async () => {
  await access?.closeAll();
  await cluster?.stop();
});

describe("the etcd client kept per workload cluster, on a real 3-member TLS cluster", () => {
  it("serves consecutive reconciles from one client that sees every member", async () => {
    for (let i = 0; i < 3; i++) {
      const { unreachable, memberCount } = await round();
      assert.deepEqual({ unreachable, memberCount }, { unreachable: [], memberCount: 3 });
    }
    assert.equal(opened.length, 1);
  });

  it("reports a SIGKILLed member unreachable within one deadline each round, and reachable on the first round after its restart", async () => {
    const victim = await follower();
    await victim.kill();
    try {
      for (let i = 1; i <= 3; i++) {
        const { ms, unreachable } = await round();
        assert.deepEqual(unreachable, [victim.name], `round ${i} with ${victim.name} killed`);
        assert.ok(
          ms <= 1.2 * deadlineMs,
          `round ${i} with ${victim.name} killed took ${Math.round(ms)} ms (deadline ${deadlineMs} ms)`,
        );
      }
    } finally {
      await victim.start();
    }
    // start() returned once the member's /health said true: the kept client must see it at once, not after
    // a reconnect backoff left over from the rounds that could not reach it.
    assert.deepEqual((await round()).unreachable, []);
    assert.equal(opened.length, 1, "the endpoints and credentials did not change, so the kept client is still the one");
  });

  it("with a SIGSTOPped member, every consecutive round takes at most about one deadline, and the member is seen again once it resumes", async () => {
    const victim = await follower();
    await victim.pause();
    try {
      for (let i = 1; i <= 3; i++) {
        const { ms, unreachable } = await round();
        assert.deepEqual(unreachable, [victim.name], `round ${i} with ${victim.name} paused`);
        assert.ok(
          ms <= 1.2 * deadlineMs,
          `round ${i} with ${victim.name} paused took ${Math.round(ms)} ms (deadline ${deadlineMs} ms)`,
        );
      }
    } finally {
      victim.resume();
    }
    // A resumed member may need a moment to answer again (its peers reconnect): eventually, not at once.
    await eventually(
      `${victim.name} to answer the kept client again`,
      async () => ((await round()).unreachable.length === 0 ? true : undefined),
      { timeoutMs: 30_000 },
    );
    const { ms, unreachable } = await round();
    assert.deepEqual(unreachable, []);
    assert.ok(ms < deadlineMs, `a healthy round after the pause took ${Math.round(ms)} ms`);
    assert.equal(opened.length, 1);
  });

  it("closes the kept client when the cluster is forgotten, and a later reconcile opens a new one that works", async () => {
    await access.forget("default", "wl");
    const { unreachable, memberCount } = await round();
    assert.deepEqual({ unreachable, memberCount }, { unreachable: [], memberCount: 3 });
    assert.equal(opened.length, 2);
  });
});
