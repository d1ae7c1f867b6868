// A kept etcd client tells when a member's connection closes (connection-watch.ts), against a real 3-member TLS etcd
// on loopback: a killed member is reported by its endpoint, once per connection that answered, and again after it
// came back and answered; closing the client reports nothing. If etcd3's internals ever stop exposing the channel,
// the first test fails instead of the controller silently falling back to polling.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { Etcd3 } from "etcd3";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import { connectionWatchSupported } from "../../src/adapters/etcd/connection-watch.ts";
import { normalizeEndpoint } from "../../src/adapters/etcd/endpoints.ts";
import type { EtcdClusterClient } from "../../src/adapters/etcd/types.ts";
import { eventually, startEtcdCluster, type EtcdCluster, type EtcdMember } from "../env/index.ts";

const deadlineMs = 2000;
let cluster: EtcdCluster;

before(async () => {
  cluster = await startEtcdCluster({ members: 3, tls: true, namePrefix: "w" });
});

after(async () => {
  await cluster?.stop();
});

function watchedClient(lost: string[]): EtcdClusterClient {
  const { caPem, certPem, keyPem } = cluster.credentials;
  return createEtcdClusterClient({
    endpoints: cluster.endpoints(),
    credentials: { caPem, certPem, keyPem },
    callDeadlineMs: deadlineMs,
    context: "etcd of cluster default/watched",
    onConnectionLost: (endpoint) => lost.push(endpoint),
  });
}

/** A member that does not lead, so killing it starts no election. */
async function follower(client: EtcdClusterClient): Promise<EtcdMember> {
  const statuses = await client.memberStatuses();
  const endpoint = statuses.find((status) => status.reachable && !status.leader)?.endpoint;
  const member = cluster.members.find((candidate) => normalizeEndpoint(candidate.clientURL) === endpoint);
  assert.ok(member, "no reachable follower");
  return member;
}

describe("a kept etcd client watching its members' connections, on a real 3-member TLS cluster", () => {
  it("reaches the gRPC channel under this etcd3 version", () => {
    const etcd = new Etcd3({ hosts: [cluster.endpoints()[0]] });
    try {
      assert.equal(connectionWatchSupported(etcd), true);
    } finally {
      etcd.close();
    }
  });

  it("names a SIGKILLed member once, and again after it restarted, answered and was killed again", async () => {
    const lost: string[] = [];
    const client = watchedClient(lost);
    let victim: EtcdMember | undefined;
    try {
      victim = await follower(client);
      const endpoint = normalizeEndpoint(victim.clientURL);
      for (const time of [1, 2]) {
        assert.ok((await client.memberStatuses()).every((status) => status.reachable));
        await victim.kill();
        await eventually(
          `the client reports ${victim.name}'s connection lost (kill ${time})`,
          async () => lost.length >= time || { waiting: `reported so far: ${JSON.stringify(lost)}` },
          { timeoutMs: 10_000 },
        );
        assert.deepEqual(lost, Array(time).fill(endpoint));
        // The member is down and its connection not re-armed: a round that cannot reach it reports nothing more.
        const statuses = await client.memberStatuses();
        assert.deepEqual(
          statuses.filter((status) => !status.reachable).map((status) => status.endpoint),
          [endpoint],
        );
        assert.deepEqual(lost, Array(time).fill(endpoint));
        await victim.start();
      }
    } finally {
      await client.close();
      if (victim && !victim.isRunning()) await victim.start();
    }
  });

  it("reports nothing when the client itself closes its connections", async () => {
    const lost: string[] = [];
    const client = watchedClient(lost);
    assert.ok((await client.memberStatuses()).every((status) => status.reachable));
    await client.close();
    // A callback would come on the next turns of the event loop, as the channels shut down.
    await sleep(500);
    assert.deepEqual(lost, []);
  });
});
