// The e2e run's bridge (e2e/lib/netns.ts) on a real kernel: a Machine leaving it must not cut the others off from the
// load balancer. A Linux bridge whose address nobody set takes the lowest address among its ports, so removing the
// Machine whose veth had it changed the bridge's address under every other Machine's ARP entry for the load balancer,
// and their packets went to an address no one had until that entry expired, up to a minute. kubeadm join, whose API
// calls give up after a minute, then failed on a replacement Machine while the Machine it replaced was deleted.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { BRIDGE_MAC } from "../../e2e/lib/netns.ts";

const fixture = fileURLToPath(new URL("./fixtures/bridge-machines.ts", import.meta.url));

describe("e2e bridge", () => {
  it("keeps its address when the Machine with the lowest veth address leaves, so the others still reach the load balancer", () => {
    const result = spawnSync("unshare", ["--net", "--", process.execPath, "--import", "tsx", fixture], {
      encoding: "utf8",
      env: { ...process.env, QUORUM_E2E_NETNS: "1" },
      timeout: 60_000,
    });
    assert.equal(result.status, 0, `the fixture failed (it needs root for unshare --net): ${result.stderr}`);
    const seen = JSON.parse(result.stdout.trim().split("\n").pop() ?? "{}") as Record<string, unknown>;
    assert.equal(seen.reachedBefore, true, `a Machine reaches the load balancer at all: ${result.stdout}`);
    assert.equal(seen.before, BRIDGE_MAC, `the bridge has the address setUpBridge gives it: ${result.stdout}`);
    assert.equal(seen.macWhileBoth, seen.before, `a Machine joining changed the bridge's address: ${result.stdout}`);
    assert.equal(seen.macAfter, seen.before, `a Machine leaving changed the bridge's address: ${result.stdout}`);
    assert.equal(
      seen.reachedAfter,
      true,
      `after a Machine left, the other could not reach the load balancer: ${result.stdout}`,
    );
  });
});
