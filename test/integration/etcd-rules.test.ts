// The etcd rules Quorum's code and its test harness rely on, checked against the etcd the tests run (bin/etcd,
// ETCD_VERSION in hack/versions.env; `QUORUM_ETCD=bin/etcd-3.6` checks the 3.6 that Kubernetes 1.36 pins). Each
// rule names who relies on it; when an etcd upgrade changes one, this file fails before the controller misbehaves.
// Every membership call goes through a fresh client: etcd3's per-host circuit breaker opens on refusals.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import type { Etcd3 } from "etcd3";
import {
  etcdBinary,
  httpGet,
  pinnedVersions,
  startEtcdCluster,
  type EtcdCluster,
  type EtcdMember,
} from "../env/index.ts";

const UNHEALTHY = "etcdserver: unhealthy cluster";

let cluster: EtcdCluster;
/** When startEtcdCluster returned: every member answered /health, so peers had just connected. */
let startedAt: number;

/** etcd's answer to one call through a client pinned to `endpoint`: "ok" or the error message. */
async function answer(endpoint: string, call: (client: Etcd3) => Promise<unknown>): Promise<string> {
  const client = cluster.client({ endpoints: [endpoint], callTimeoutMs: 5_000 });
  try {
    await call(client);
    return "ok";
  } catch (error) {
    return (error as Error).message;
  } finally {
    client.close();
  }
}

async function idOf(member: EtcdMember): Promise<string> {
  return cluster.memberId(member);
}

async function leaderMember(): Promise<EtcdMember> {
  for (const member of cluster.members.filter((m) => m.isRunning())) {
    const client = cluster.client({ endpoints: [member.clientURL] });
    try {
      const status = await client.maintenance.status();
      if (status.leader === status.header.member_id) return member;
    } finally {
      client.close();
    }
  }
  throw new Error("no running member reports itself leader");
}

const peerURL = (hostNumber: number) => `https://${cluster.subnet.address(hostNumber)}:2380`;

before(async () => {
  cluster = await startEtcdCluster({ members: 3, tls: true, capacity: 12 });
  startedAt = Date.now();
});

after(async () => {
  await cluster?.stop();
});

describe(`etcd rules Quorum relies on (${etcdBinary()})`, () => {
  it("runs the etcd pinned in hack/versions.env, or 3.6 or later when QUORUM_ETCD names another", () => {
    const printed = /^etcd Version: (\d+)\.(\d+)\.(\d+)$/m.exec(
      execFileSync(etcdBinary(), ["--version"], { encoding: "utf8" }),
    );
    assert.ok(printed, "etcd --version prints its version");
    if (!process.env.QUORUM_ETCD) assert.equal(`v${printed[1]}.${printed[2]}.${printed[3]}`, pinnedVersions().etcd);
    else assert.ok(Number(printed[1]) > 3 || (Number(printed[1]) === 3 && Number(printed[2]) >= 6), printed[0]);
  });

  // selection.ts removalWindow and the simulator's etcdRefusesRemoval; the harness's addMember retries this.
  it("refuses a voter removal and a learner add with 'unhealthy cluster' until its peers have been connected for 5 s", async () => {
    const endpoint = cluster.members[0].clientURL;
    const m3 = await idOf(cluster.members[2]);
    assert.equal(Date.now() - startedAt < 4_000, true, "the first calls are made within the window");
    assert.match(await answer(endpoint, (c) => c.cluster.memberRemove({ ID: m3 })), new RegExp(UNHEALTHY));
    const add = (c: Etcd3) => c.cluster.memberAdd({ peerURLs: [peerURL(10)], isLearner: true });
    assert.match(await answer(endpoint, add), new RegExp(UNHEALTHY));
    let accepted = "";
    while (Date.now() - startedAt < 20_000 && (accepted = await answer(endpoint, add)) !== "ok") {
      assert.match(accepted, new RegExp(UNHEALTHY));
      await sleep(250);
    }
    assert.equal(accepted, "ok", "the add is accepted once the window has passed");
    const waited = Date.now() - startedAt;
    assert.ok(waited >= 3_000, `accepted ${waited} ms after the members answered /health: too early for a 5 s window`);
    const learner = (await cluster.memberList()).find((m) => m.peerURLs.includes(peerURL(10)));
    assert.ok(learner?.isLearner);
    assert.equal(await answer(endpoint, (c) => c.cluster.memberRemove({ ID: learner.ID })), "ok");
  });

  // client.ts (addMember's idempotence, promoteLearner's answers), e2e/provider/machine.ts (learner start probe).
  it("answers learner adds and promotions with the texts the etcd adapter classifies", async () => {
    const endpoint = cluster.members[0].clientURL;
    const add = (host: number) => (c: Etcd3) => c.cluster.memberAdd({ peerURLs: [peerURL(host)], isLearner: true });
    assert.equal(await answer(endpoint, add(11)), "ok");
    // A retry in the same second collides on the ID (derived from peer URLs and the time in seconds), later on the URLs.
    assert.match(
      await answer(endpoint, add(11)),
      /etcdserver: member ID already exist|etcdserver: Peer URLs already exists/,
    );
    assert.match(await answer(endpoint, add(12)), /etcdserver: too many learner members in cluster/);
    const id = (await cluster.memberList()).find((m) => m.peerURLs.includes(peerURL(11)))!.ID;
    assert.match(
      await answer(endpoint, (c) => c.cluster.memberPromote({ ID: id })),
      /etcdserver: can only promote a learner member which is in sync with leader/,
    );
    assert.equal(await answer(endpoint, (c) => c.cluster.memberRemove({ ID: id })), "ok", "a learner leaves at once");

    const learner = await cluster.addMember({ learner: true });
    // The harness waits for /health: true, so a learner answers it; its gRPC serves status but no member list.
    await learner.start({ learner: true });
    const tls = {
      ca: cluster.credentials.caPem,
      cert: cluster.credentials.certPem,
      key: cluster.credentials.keyPem,
      servername: cluster.credentials.serverName,
    };
    assert.match((await httpGet(`${learner.clientURL}/health`, tls)).body, /"health"\s*:\s*"true"/);
    assert.equal(await answer(learner.clientURL, (c) => c.maintenance.status()), "ok");
    assert.match(
      await answer(learner.clientURL, (c) => c.cluster.memberList({})),
      /etcdserver: rpc not supported for learner/,
    );
    await cluster.promoteMember(learner);
    const learnerId = await idOf(learner);
    assert.match(
      await answer(endpoint, (c) => c.cluster.memberPromote({ ID: learnerId })),
      /etcdserver: can only promote a learner member$/,
    );
  });

  // plan.ts forwards leadership off a leaving voter and removes it next: no window opens in between.
  it("accepts a voter removal through a new leader right after leadership moved to it", async () => {
    await sleep(Math.max(0, 6_000 - (Date.now() - startedAt)));
    await sleep(6_000); // the voter promoted above must have been connected for 5 s too
    const leader = await leaderMember();
    const voters = cluster.members.filter((m) => m.isRunning() && m !== leader);
    const [target, leaving] = voters;
    const targetId = await idOf(target);
    assert.match(
      await answer(target.clientURL, (c) => c.maintenance.moveLeader({ targetID: targetId })),
      /etcdserver: not leader/,
      "moveLeader must be sent to the leader",
    );
    assert.equal(await answer(leader.clientURL, (c) => c.maintenance.moveLeader({ targetID: targetId })), "ok");
    assert.equal((await leaderMember()).name, target.name);
    const leavingId = await idOf(leaving);
    assert.equal(await answer(target.clientURL, (c) => c.cluster.memberRemove({ ID: leavingId })), "ok");
    await leaving.stop();
  });

  // assess.ts CreateMachine counts the new member as unhealthy and wants a quorum of the grown voter set, as etcd
  // does: with one of three voters down a join is refused until that voter is removed.
  it("with one of three voters down, refuses even a learner add and a live voter's removal, and removes the down voter at once", async () => {
    const running = cluster.members.filter((m) => m.isRunning());
    assert.equal(running.length, 3);
    const [serving, live, down] = running;
    const downId = await idOf(down);
    const liveId = await idOf(live);
    await down.kill();
    const add = (c: Etcd3) => c.cluster.memberAdd({ peerURLs: [peerURL(13)], isLearner: true });
    assert.match(await answer(serving.clientURL, add), new RegExp(UNHEALTHY));
    await sleep(6_000); // past any 5 s window: the refusal stays
    assert.match(await answer(serving.clientURL, add), new RegExp(UNHEALTHY));
    assert.match(await answer(serving.clientURL, (c) => c.cluster.memberRemove({ ID: liveId })), new RegExp(UNHEALTHY));
    assert.equal(await answer(serving.clientURL, (c) => c.cluster.memberRemove({ ID: downId })), "ok");
    assert.equal(await answer(serving.clientURL, add), "ok", "two healthy voters of two take a learner");
  });
});
