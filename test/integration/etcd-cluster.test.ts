// The test harness's etcd clusters are real: TLS-only, learners join and get promoted, members can be
// removed, paused (SIGSTOP) and killed (SIGKILL), and each of those is visible to an etcd client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Etcd3 } from "etcd3";
import { isProcessAlive, startEtcdCluster, type EtcdCluster, type EtcdMember } from "../env/index.ts";

async function withCluster(body: (cluster: EtcdCluster) => Promise<void>): Promise<void> {
  const cluster = await startEtcdCluster({ members: 3, tls: true });
  try {
    await body(cluster);
  } finally {
    await cluster.stop();
  }
}

/** Status of one member through a client pinned to its endpoint, or the error it gave within `deadlineMs`. */
async function memberStatus(cluster: EtcdCluster, member: EtcdMember, deadlineMs: number) {
  const client = cluster.client({ endpoints: [member.clientURL], callTimeoutMs: deadlineMs });
  try {
    return { ok: true as const, status: await client.maintenance.status() };
  } catch (error) {
    return { ok: false as const, error: error as Error };
  } finally {
    client.close();
  }
}

async function voterNames(cluster: EtcdCluster): Promise<string[]> {
  return (await cluster.memberList())
    .filter((m) => !m.isLearner)
    .map((m) => m.name)
    .sort();
}

test("a three-member TLS cluster serves clients holding the generated certificate and refuses those without one", async () => {
  await withCluster(async (cluster) => {
    assert.equal(cluster.endpoints().length, 3);
    for (const url of cluster.endpoints()) assert.match(url, /^https:\/\/127\.\d+\.\d+\.[123]:2379$/);
    assert.equal(
      new Set(cluster.endpoints().map((url) => new URL(url).hostname.split(".").slice(0, 3).join("."))).size,
      1,
    );

    const client = cluster.client();
    await client.put("greeting").value("hello");
    assert.equal(await client.get("greeting").string(), "hello");
    assert.deepEqual(await voterNames(cluster), ["m1", "m2", "m3"]);

    const anonymous = new Etcd3({
      hosts: cluster.endpoints(),
      credentials: { rootCertificate: Buffer.from(cluster.credentials.caPem) },
      grpcOptions: { "grpc.ssl_target_name_override": cluster.credentials.serverName },
      defaultCallOptions: () => ({ deadline: Date.now() + 1_000 }),
    });
    try {
      await assert.rejects(anonymous.get("greeting").string());
    } finally {
      anonymous.close();
    }
  });
});

test("a member added as a learner starts, is promoted to voter, and another member can then be removed", async () => {
  await withCluster(async (cluster) => {
    const client = cluster.client();
    await client.put("before-membership-change").value("kept");

    const learner = await cluster.addMember({ learner: true });
    const added = (await cluster.memberList()).find((m) => m.peerURLs.includes(learner.peerURL));
    assert.equal(added?.isLearner, true, "the new member is a learner before it is promoted");
    assert.equal(added?.name, "", "an unstarted member has no name yet");

    await learner.start({ learner: true });
    await cluster.promoteMember(learner);
    assert.deepEqual(await voterNames(cluster), ["m1", "m2", "m3", "m4"]);

    const removed = cluster.member("m1");
    await cluster.removeMember(removed);
    assert.deepEqual(await voterNames(cluster), ["m2", "m3", "m4"]);
    assert.equal(removed.isRunning(), false);
    assert.equal(cluster.endpoints().includes(removed.clientURL), false);

    const afterwards = cluster.client();
    assert.equal(await afterwards.get("before-membership-change").string(), "kept");
    assert.equal((await memberStatus(cluster, learner, 5_000)).ok, true, "the promoted member answers status calls");
  });
});

test("a paused member (SIGSTOP) stops answering while the others keep serving, and answers again after resume", async () => {
  await withCluster(async (cluster) => {
    const paused = cluster.member("m2");
    assert.equal((await memberStatus(cluster, paused, 5_000)).ok, true);

    await paused.pause();
    try {
      const whilePaused = await memberStatus(cluster, paused, 1_000);
      assert.equal(whilePaused.ok, false, "a stopped process cannot answer");
      assert.equal(paused.isRunning(), true, "pausing is not exiting");

      const others = cluster.client({
        endpoints: [cluster.member("m1").clientURL, cluster.member("m3").clientURL],
        callTimeoutMs: 10_000,
      });
      await others.put("written-while-m2-paused").value("yes");
      assert.equal(await others.get("written-while-m2-paused").string(), "yes");
    } finally {
      paused.resume();
    }
    // Resumed, it answers again (after catching up, possibly via a new election if it was the leader).
    const deadline = Date.now() + 30_000;
    let resumed = await memberStatus(cluster, paused, 2_000);
    while (!resumed.ok && Date.now() < deadline) {
      await sleep(250);
      resumed = await memberStatus(cluster, paused, 2_000);
    }
    assert.equal(resumed.ok, true, `m2 answers after resume: ${resumed.ok ? "" : resumed.error.message}`);
  });
});

test("a killed member (SIGKILL) exits by that signal, refuses clients, stays in the member list, and rejoins when restarted", async () => {
  await withCluster(async (cluster) => {
    const victim = cluster.member("m3");
    const pid = victim.pid()!;
    const exit = await victim.kill();
    assert.equal(exit?.signal, "SIGKILL");
    assert.equal(isProcessAlive(pid, "etcd"), false);

    const status = await memberStatus(cluster, victim, 2_000);
    assert.equal(status.ok, false, "a dead member answers nothing");
    assert.deepEqual(await voterNames(cluster), ["m1", "m2", "m3"], "killing a process does not remove its member");

    const survivors = cluster.client({
      endpoints: [cluster.member("m1").clientURL, cluster.member("m2").clientURL],
      callTimeoutMs: 10_000,
    });
    await survivors.put("written-with-two-of-three").value("quorum");

    await victim.start();
    assert.notEqual(victim.pid(), pid);
    const restarted = cluster.client({ endpoints: [victim.clientURL], callTimeoutMs: 10_000 });
    assert.equal(await restarted.get("written-with-two-of-three").string(), "quorum");
  });
});
