// The etcd client's failure paths against loopback sockets that are not etcd: a port nobody listens on and
// a server that accepts connections but never answers (what a frozen member looks like).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startLoopbackPeers, type LoopbackPeers } from "../loopback.ts";
import { createEtcdClusterClient } from "../../../../src/adapters/etcd/client.ts";
import { EndpointUnreachableError } from "../../../../src/adapters/errors.ts";

describe("etcd client without a live member", () => {
  let peers: LoopbackPeers;
  let silentPort = 0;
  let deadPort = 0;

  before(async () => {
    peers = await startLoopbackPeers();
    ({ silentPort, deadPort } = peers);
  });
  after(() => peers.close());

  it("fails listing members with EndpointUnreachableError naming every endpoint and its cause", async () => {
    const client = createEtcdClusterClient({
      endpoints: [`http://127.0.0.1:${deadPort}`, `http://127.0.0.1:${silentPort}`],
      callDeadlineMs: 300,
      context: "etcd of cluster team-a/prod",
    });
    try {
      await assert.rejects(client.listMembers(), (error: unknown) => {
        assert.ok(error instanceof EndpointUnreachableError);
        assert.match(
          error.message,
          /^etcd of cluster team-a\/prod \(member list\): not reachable: no endpoint answered within 300 ms/,
        );
        assert.match(
          error.message,
          new RegExp(`http://127\\.0\\.0\\.1:${deadPort}: .*(ECONNREFUSED|No connection established)`),
        );
        assert.match(error.message, new RegExp(`http://127\\.0\\.0\\.1:${silentPort}: no answer within 300 ms`));
        assert.match(error.message, /check that the control-plane Machines are running/);
        assert.match(
          error.message,
          /if only the API server endpoint is reachable .* set spec\.etcd\.access: APIServerProxy$/,
        );
        return true;
      });
    } finally {
      await client.close();
    }
  });

  it("reports a member that accepts connections but never answers as unreachable instead of waiting for it", async () => {
    const client = createEtcdClusterClient({ endpoints: [], callDeadlineMs: 300 });
    try {
      const statuses = await client.memberStatuses([
        { id: "1", name: "frozen", peerURLs: [], clientURLs: [`http://127.0.0.1:${silentPort}`], learner: false },
        { id: "2", name: "", peerURLs: ["http://127.0.0.1:1"], clientURLs: [], learner: true },
      ]);
      assert.deepEqual(statuses, [
        {
          memberId: "1",
          endpoint: `http://127.0.0.1:${silentPort}`,
          reachable: false,
          leader: false,
          errors: [
            `etcd member at http://127.0.0.1:${silentPort} not reachable from the management cluster (no answer ` +
              "within 300 ms); if only the API server endpoint is reachable, set spec.etcd.access: APIServerProxy",
          ],
        },
        { memberId: "2", reachable: false, leader: false, errors: ["member has not started yet (no client URLs)"] },
      ]);
    } finally {
      await client.close();
    }
  });

  it("keeps costing at most one deadline per status round when a kept client asks a frozen member again and again", async () => {
    const client = createEtcdClusterClient({ endpoints: [], callDeadlineMs: 300 });
    const frozen = {
      id: "1",
      name: "frozen",
      peerURLs: [],
      clientURLs: [`http://127.0.0.1:${silentPort}`],
      learner: false,
    };
    const refusing = {
      id: "2",
      name: "dead",
      peerURLs: [],
      clientURLs: [`http://127.0.0.1:${deadPort}`],
      learner: false,
    };
    try {
      for (let round = 1; round <= 4; round++) {
        const started = performance.now();
        const statuses = await client.memberStatuses([frozen, refusing]);
        const elapsedMs = performance.now() - started;
        // Under two deadlines: a round that queued behind the hung call of the one before would take two or more.
        // How close to one deadline a round stays (≤ 1.2×, issue 19) is the health benchmark's to measure, not a
        // test's: a loaded machine can hold a timer back by more than the 60 ms such a bound would leave.
        assert.ok(elapsedMs < 2 * 300, `round ${round} took ${Math.round(elapsedMs)} ms with a 300 ms deadline`);
        assert.deepEqual(
          statuses.map((status) => [status.memberId, status.reachable]),
          [
            ["1", false],
            ["2", false],
          ],
        );
        assert.match(statuses[0].errors[0], /not reachable from the management cluster \(no answer within 300 ms\)/);
      }
    } finally {
      await client.close();
    }
  });

  it("says there is no endpoint to ask when it was given none", async () => {
    const client = createEtcdClusterClient({
      endpoints: [],
      callDeadlineMs: 300,
      context: "etcd of cluster team-a/prod",
    });
    await assert.rejects(client.listMembers(), /etcd of cluster team-a\/prod \(member list\): no endpoint to ask/);
    await client.close();
  });
});
