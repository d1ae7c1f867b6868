// The etcd adapter against a real 3-member TLS etcd on loopback, authenticating with a client certificate
// Quorum issues itself from the cluster's `<cluster>-etcd` CA Secret (here the harness's CA, brought by the
// "user"). Covers what the controller relies on: correct members and statuses, a status round bounded by one
// deadline however a member fails, idempotent add/remove, leadership transfer and learner promotion.
import assert from "node:assert/strict";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import { EtcdClientCertificates } from "../../src/adapters/etcd/credentials.ts";
import type { EtcdClientCredentials, EtcdClusterClient, EtcdMember } from "../../src/adapters/etcd/types.ts";
import { observeEtcd } from "../../src/controller/etcd-view.ts";
import { startEtcdCluster, type EtcdCluster } from "../env/index.ts";
import { httpGet } from "../env/net.ts";
import { MemorySecretStore } from "../unit/adapters/memory-secret-store.ts";

// Long enough for a healthy member on a loaded 2-core machine, short enough to keep the suite quick.
const deadlineMs = 2000;

let cluster: EtcdCluster;
let credentials: EtcdClientCredentials;
const openClients: EtcdClusterClient[] = [];

function client(): EtcdClusterClient {
  const opened = createEtcdClusterClient({
    endpoints: cluster.endpoints(),
    credentials,
    callDeadlineMs: deadlineMs,
    context: "etcd of cluster default/wl",
  });
  openClients.push(opened);
  return opened;
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await sleep(250);
  }
}

/** The harness member behind an etcd member (by peer URL). */
function harnessMember(member: EtcdMember) {
  const found = cluster.members.find((candidate) => member.peerURLs.includes(candidate.peerURL));
  assert.ok(found, `no harness member for ${member.peerURLs.join(",")}`);
  return found;
}

before(async () => {
  cluster = await startEtcdCluster({ members: 3, tls: true });
  const ca = cluster.ca;
  assert.ok(ca);
  const store = new MemorySecretStore();
  store.seed("default", "wl-etcd", { "tls.crt": ca.certPem, "tls.key": ca.keyPem });
  credentials = await new EtcdClientCertificates(store).get("default", "wl", new Date());
});

after(async () => {
  for (const opened of openClients) await opened.close();
  await cluster?.stop();
});

describe("etcd adapter on a real 3-member TLS cluster", () => {
  it("lists every member and reports each reachable, with one leader everyone agrees on", async () => {
    const etcd = client();
    const members = await etcd.listMembers();
    assert.deepEqual(members.map((member) => member.name).sort(), ["m1", "m2", "m3"]);
    assert.deepEqual(members.flatMap((member) => member.clientURLs).sort(), [...cluster.endpoints()].sort());
    assert.ok(members.every((member) => !member.learner && /^\d+$/.test(member.id)));

    const statuses = await etcd.memberStatuses(members);
    assert.deepEqual(
      statuses.map((status) => status.memberId),
      members.map((member) => member.id),
    );
    for (const status of statuses) {
      assert.equal(status.reachable, true, `${status.memberId}: ${status.errors.join(", ")}`);
      assert.deepEqual(status.errors, []);
      assert.ok((status.raftTerm ?? 0) > 0 && (status.raftIndex ?? 0) > 0 && (status.raftAppliedIndex ?? 0) > 0);
      assert.ok((status.dbSize ?? 0) > 0);
      assert.match(status.version ?? "", /^3\.\d+\.\d+/);
    }
    const leaders = statuses.filter((status) => status.leader);
    assert.equal(leaders.length, 1);
    assert.ok(statuses.every((status) => status.leaderId === leaders[0].memberId));
    assert.deepEqual(await etcd.alarms(), []);
  });

  it("treats removing a member that is not in the cluster as success", async () => {
    assert.deepEqual(await client().removeMember("1234567890123"), { removed: false });
  });

  it("adds a member (idempotently, by peer URL) and removes it again", async () => {
    const etcd = client();
    const peerURL = `https://${cluster.subnet.address(200)}:2380`;
    // etcd answers "unhealthy cluster" to adds for a few seconds after it starts: a normal, retried refusal.
    const added = await eventually("member add", async () => etcd.addMember([peerURL], { learner: true }));
    assert.equal(added.learner, true);
    assert.deepEqual(added.peerURLs, [peerURL]);
    assert.equal(added.name, "");
    const again = await etcd.addMember([peerURL], { learner: true });
    assert.equal(again.id, added.id);

    const statuses = await etcd.memberStatuses();
    const unstarted = statuses.find((status) => status.memberId === added.id);
    assert.deepEqual(unstarted, {
      memberId: added.id,
      reachable: false,
      leader: false,
      errors: ["member has not started yet (no client URLs)"],
    });

    assert.deepEqual(await etcd.removeMember(added.id), { removed: true });
    assert.ok(!(await etcd.listMembers()).some((member) => member.id === added.id));
    assert.deepEqual(await etcd.removeMember(added.id), { removed: false });
  });

  it("moves leadership to the member it is asked to", async () => {
    const etcd = client();
    const before = await etcd.memberStatuses();
    const target = before.find((status) => !status.leader && status.reachable);
    assert.ok(target);
    await etcd.moveLeader(target.memberId);
    const after = await eventually("every member to follow the new leader", async () => {
      const statuses = await etcd.memberStatuses();
      const voters = statuses.filter((status) => status.reachable);
      return voters.length >= 3 && voters.every((status) => status.leaderId === target.memberId) ? statuses : undefined;
    });
    assert.deepEqual(
      after.filter((status) => status.leader).map((status) => status.memberId),
      [target.memberId],
    );
    // Asking again for the member that already leads changes nothing.
    await etcd.moveLeader(target.memberId);
    assert.equal((await etcd.memberStatuses()).find((status) => status.leader)?.memberId, target.memberId);
  });

  it("asks one member, not every one, for the member list and the alarms of a health round", async () => {
    // etcd counts the gRPC calls it was sent (grpc_server_started_total on /metrics): summed over the members,
    // a round makes one MemberList and one Alarm call while the member it asks answers, not one per endpoint.
    const calls = async (method: string) => {
      let total = 0;
      for (const member of cluster.members) {
        const { status, body } = await httpGet(`${member.clientURL}/metrics`, {
          ca: cluster.credentials.caPem,
          cert: cluster.credentials.certPem,
          key: cluster.credentials.keyPem,
          servername: cluster.credentials.serverName,
        });
        assert.equal(status, 200, `GET ${member.clientURL}/metrics: ${body.slice(0, 200)}`);
        const line = new RegExp(`^grpc_server_started_total\\{[^}]*grpc_method="${method}"[^}]*\\} (\\d+)$`, "m");
        total += Number(line.exec(body)?.[1] ?? 0);
      }
      return total;
    };
    const etcd = client();
    assert.ok((await observeEtcd(etcd)).ok);
    const [listsBefore, alarmsBefore] = [await calls("MemberList"), await calls("Alarm")];
    const rounds = 10;
    for (let i = 0; i < rounds; i++) {
      const observed = await observeEtcd(etcd);
      assert.ok(observed.ok && observed.observation.statuses.every((status) => status.reachable));
    }
    const lists = (await calls("MemberList")) - listsBefore;
    const alarms = (await calls("Alarm")) - alarmsBefore;
    // Asking every endpoint would make 3 of each per round; a slow answer may bring in the others now and then.
    assert.ok(lists >= rounds && lists < 2 * rounds, `${lists} MemberList calls in ${rounds} rounds`);
    assert.ok(alarms >= rounds && alarms < 2 * rounds, `${alarms} Alarm calls in ${rounds} rounds`);
  });

  it("asks the others when the endpoint it asks first hangs, then keeps asking the one that answered", async () => {
    // A Machine address that accepts connections and never answers (a frozen host), listed first.
    let connections = 0;
    const sockets = new Set<Socket>();
    const frozen = createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => frozen.listen(0, "127.0.0.1", resolve));
    const { port } = frozen.address() as AddressInfo;
    const etcd = createEtcdClusterClient({
      endpoints: [`https://127.0.0.1:${port}`, ...cluster.endpoints()],
      credentials,
      callDeadlineMs: deadlineMs,
      context: "etcd of cluster default/wl",
    });
    try {
      assert.equal((await etcd.listMembers()).length, 3, "the live members answered for the frozen one");
      assert.equal(connections, 1);
      // The frozen call runs out its deadline and its connection is dropped; later calls ask the member that answered.
      await sleep(deadlineMs + 500);
      for (let i = 0; i < 3; i++) assert.equal((await etcd.listMembers()).length, 3);
      assert.ok((await etcd.alarms()).length === 0);
      assert.equal(connections, 1, "the frozen endpoint was asked again although a live member answers");
    } finally {
      await etcd.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => frozen.close(resolve));
    }
  });

  for (const failure of ["killed (SIGKILL)", "paused (SIGSTOP: TCP connects, nothing answers)"] as const) {
    it(`with one member ${failure}, a status round waits out one call deadline, not two, and marks exactly that member unreachable`, async () => {
      const etcd = client();
      const members = await etcd.listMembers();
      const statuses = await etcd.memberStatuses(members);
      const victimId = statuses.find((status) => !status.leader)?.memberId;
      const victim = harnessMember(members.find((member) => member.id === victimId)!);
      if (failure.startsWith("killed")) await victim.kill();
      else await victim.pause();
      try {
        const started = performance.now();
        const round = await etcd.memberStatuses(members);
        const elapsedMs = performance.now() - started;
        // Under two deadlines: one wait for the failed member, no second (a retry, or a connect timeout before the
        // call's own). How close to one deadline a round stays (≤ 1.2×, issue 19) is measured by bench/health, not
        // asserted here, where a loaded machine can hold a timer back.
        assert.ok(
          elapsedMs < 2 * deadlineMs,
          `status round took ${Math.round(elapsedMs)} ms (deadline ${deadlineMs} ms)`,
        );
        assert.deepEqual(
          round.filter((status) => !status.reachable).map((status) => status.memberId),
          [victimId],
        );
        const down = round.find((status) => status.memberId === victimId)!;
        assert.equal(down.errors.length, 1);
        assert.ok(round.filter((status) => status.reachable).every((status) => status.errors.length === 0));

        // A whole observation round (member list from whoever answers first, statuses, alarms) also completes.
        const observation = await observeEtcd(client());
        assert.ok(observation.ok);
        assert.equal(observation.observation.members.length, 3);
        assert.deepEqual(
          observation.observation.statuses.filter((status) => !status.reachable).map((status) => status.memberId),
          [victimId],
        );
      } finally {
        if (failure.startsWith("killed")) await victim.start();
        else victim.resume();
      }
      await eventually("the member to answer again", async () => {
        const statuses = await client().memberStatuses();
        return statuses.every((status) => status.reachable) ? true : undefined;
      });
    });
  }

  it("with two of three members killed, lists members only as one member's own view, and says so", async () => {
    const etcd = client();
    const members = await etcd.listMembers();
    const statuses = await etcd.memberStatuses(members);
    // The survivor is a follower, so it is not the last leader still believing in itself for an election timeout.
    const survivorId = statuses.find((status) => !status.leader)?.memberId;
    const victims = members.filter((member) => member.id !== survivorId).map(harnessMember);
    for (const victim of victims) await victim.kill();
    try {
      // The linearizable read (the default) needs the leader's read index, which no quorum can give.
      await assert.rejects(etcd.listMembers(), /member list/);
      const own = await etcd.listMembers({ serializable: true });
      assert.deepEqual(own.map((member) => member.id).sort(), members.map((member) => member.id).sort());

      const observation = await observeEtcd(client());
      assert.ok(observation.ok, observation.ok ? "" : observation.error);
      assert.equal(observation.observation.members.length, 3);
      assert.match(observation.observation.unconfirmed ?? "", /member list/);
      assert.deepEqual(
        observation.observation.statuses.filter((status) => status.reachable).map((status) => status.memberId),
        [survivorId],
      );
    } finally {
      for (const victim of victims) await victim.start();
    }
    await eventually("a leader again, confirming the member list", async () => {
      const observation = await observeEtcd(client());
      return observation.ok && observation.observation.unconfirmed === undefined ? true : undefined;
    });
  });

  it("promotes a learner once it has caught up, answering 'not caught up' before that", async () => {
    const etcd = client();
    const learner = await cluster.addMember({ learner: true });
    const member = (await etcd.listMembers()).find((candidate) => candidate.peerURLs.includes(learner.peerURL));
    assert.ok(member?.learner);
    // Not started: it holds none of the log, so etcd refuses to promote it.
    assert.deepEqual(await etcd.promoteLearner(member.id), { promoted: false, reason: "not caught up" });

    await learner.start({ learner: true });
    const attempts: string[] = [];
    await eventually(
      "the learner to be promoted",
      async () => {
        const result = await etcd.promoteLearner(member.id);
        attempts.push(result.promoted ? "promoted" : result.reason);
        return result.promoted ? true : undefined;
      },
      60_000,
    );
    const promoted = (await etcd.listMembers()).find((candidate) => candidate.id === member.id);
    assert.equal(promoted?.learner, false);
    assert.equal(promoted?.name, learner.name);
    // Promoting a voter again (a retry after a crash) is success too.
    assert.deepEqual(await etcd.promoteLearner(member.id), { promoted: true });
    const statuses = await eventually("the new voter to report status", async () => {
      const round = await etcd.memberStatuses();
      return round.find((status) => status.memberId === member.id)?.reachable ? round : undefined;
    });
    assert.equal(statuses.length, 4);
  });
});
