// spec.etcd.access APIServerProxy without a cluster: which Node and pod a member's client URL resolves to, and how
// the tunnel lists Nodes (cached, re-listed on a miss at most every interval) and says why it cannot forward.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { describe, it } from "node:test";
import type { Node } from "../../../../src/api/capi.ts";
import { ApiServerTunnel } from "../../../../src/adapters/etcd/apiserver-tunnel.ts";
import { etcdPodOf, nodeWithAddress, targetOf } from "../../../../src/adapters/etcd/etcd-pods.ts";

function node(name: string, addresses: string[], deleting = false): Node {
  return {
    metadata: { name, ...(deleting ? { deletionTimestamp: "2026-12-01T00:00:00Z" } : {}) },
    status: { addresses: addresses.map((address) => ({ type: "InternalIP", address })) },
  };
}

describe("which pod serves an etcd client URL", () => {
  const nodes = [node("cp-a", ["10.0.0.1", "cp-a.example"]), node("cp-b", ["10.0.0.2"]), node("cp-c", ["fd00::3"])];
  const cases: { endpoint: string; host: string; port: number; node: string | undefined }[] = [
    { endpoint: "https://10.0.0.2:2379", host: "10.0.0.2", port: 2379, node: "cp-b" },
    { endpoint: "https://[fd00::3]:12379", host: "fd00::3", port: 12379, node: "cp-c" },
    { endpoint: "https://CP-A.example:2379", host: "cp-a.example", port: 2379, node: "cp-a" },
    { endpoint: "https://10.0.0.1", host: "10.0.0.1", port: 2379, node: "cp-a" },
    { endpoint: "https://10.0.0.9:2379", host: "10.0.0.9", port: 2379, node: undefined },
  ];
  for (const example of cases) {
    it(`resolves ${example.endpoint} to ${example.node ? `Node ${example.node}` : "no Node"}`, () => {
      const target = targetOf(example.endpoint);
      assert.deepEqual(target, { host: example.host, port: example.port });
      assert.equal(nodeWithAddress(nodes, target.host), example.node);
    });
  }

  it("prefers the Node that is not being deleted when a replacement has the same address", () => {
    const nodesWithStale = [node("old", ["10.0.0.5"], true), node("new", ["10.0.0.5"])];
    assert.equal(nodeWithAddress(nodesWithStale, "10.0.0.5"), "new");
  });

  it("names kubeadm's static etcd pod of the Node, as KCP does", () => {
    assert.deepEqual(etcdPodOf("cp-b"), { namespace: "kube-system", name: "etcd-cp-b" });
  });
});

/** Opens a TCP connection to the tunnel's listener and waits until the tunnel closes it. */
async function connectionThrough(url: string): Promise<void> {
  const { port } = new URL(url);
  await new Promise<void>((resolve) => {
    const socket = connect(Number(port), "127.0.0.1");
    socket.on("error", () => {});
    socket.on("close", () => resolve());
  });
}

describe("APIServerProxy tunnel", () => {
  it("lists Nodes once for many connections, and again on a miss only after the re-list interval", async () => {
    let now = 1_000;
    let lists = 0;
    const tunnel = new ApiServerTunnel({
      server: "https://api.example:6443",
      kubeConfig: () => assert.fail("no port-forward is opened without a Node"),
      listNodes: async (scope) => {
        if (scope === "control-plane") lists++; // each re-list starts with it
        return [node("cp-a", ["10.0.0.1"])];
      },
      podExists: async () => true,
      openTimeoutMs: 1_000,
      relistIntervalMs: 5_000,
      now: () => now,
    });
    try {
      const endpoint = "https://10.0.0.9:2379";
      const { url, servername } = await tunnel.dial(endpoint);
      assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(servername, "10.0.0.9", "the member's certificate is checked for its own address");
      await connectionThrough(url);
      await connectionThrough(url);
      assert.equal(lists, 1);
      assert.match(
        tunnel.explain(endpoint, 0, "connection closed"),
        /^etcd member at https:\/\/10\.0\.0\.9:2379 not reachable through the workload API server https:\/\/api\.example:6443: no Node of the workload cluster has the address 10\.0\.0\.9 \(1 Nodes listed\)/,
      );
      now += 5_000;
      await connectionThrough(url);
      assert.equal(lists, 2);
      assert.equal((await tunnel.dial(endpoint)).url, url, "one listener per member");
    } finally {
      await tunnel.close();
    }
  });

  it("lists only the control-plane Nodes, and every Node only for an address none of them has, then keeps its Node", async () => {
    // A workload cluster of many workers: one member's Node lost kubeadm's control-plane label (a join that stopped
    // before mark-control-plane, a label taken off by hand), the other's has it.
    let now = 1_000;
    const scopes: string[] = [];
    const labelled = [node("cp-a", ["10.0.0.1"])];
    const workers = Array.from({ length: 50 }, (_, index) => node(`worker-${index}`, [`10.1.0.${index}`]));
    const all = [...labelled, node("cp-b", ["10.0.0.2"]), ...workers];
    const tunnel = new ApiServerTunnel({
      server: "https://api.example:6443",
      kubeConfig: async () => {
        throw new Error("no port-forward in this test");
      },
      listNodes: async (scope) => {
        scopes.push(scope);
        return scope === "all" ? all : labelled;
      },
      podExists: async () => true,
      openTimeoutMs: 1_000,
      now: () => now,
    });
    /** The pod the tunnel tried to forward to for a member's client URL, as its error names it. */
    const podFor = async (endpoint: string) => {
      await connectionThrough((await tunnel.dial(endpoint)).url);
      return tunnel.explain(endpoint, 0, "connection closed");
    };
    try {
      assert.match(await podFor("https://10.0.0.1:2379"), /pod kube-system\/etcd-cp-a \(node cp-a\)/);
      assert.deepEqual(scopes, ["control-plane"], "a labelled Node is found without listing the workers");
      now += 5_000;
      assert.match(await podFor("https://10.0.0.2:2379"), /pod kube-system\/etcd-cp-b \(node cp-b\)/);
      assert.deepEqual(scopes, ["control-plane", "control-plane", "all"]);
      now += 5_000;
      assert.match(await podFor("https://10.0.0.2:2379"), /pod kube-system\/etcd-cp-b \(node cp-b\)/);
      assert.equal(scopes.length, 3, "the unlabelled Node found in the full list is kept");
      assert.match(
        await podFor("https://10.0.0.9:2379"),
        /no Node of the workload cluster has the address 10\.0\.0\.9 \(52 Nodes listed\)/,
      );
      assert.deepEqual(scopes.slice(3), ["control-plane", "all"]);
      now += 5_000;
      assert.match(await podFor("https://10.0.0.2:2379"), /pod kube-system\/etcd-cp-b \(node cp-b\)/);
      assert.equal(scopes.length, 5, "a full list for another address keeps the Node of every member dialled");
    } finally {
      await tunnel.close();
    }
  });

  it("finds a member no Node lists the address of by its Machine's nodeRef, and says so when the pod is missing", async () => {
    // kubeadm advertises etcd on the host's second NIC (localAPIEndpoint.advertiseAddress) while the kubelet reports
    // the first one's address as the Node's InternalIP.
    const scopes: string[] = [];
    const tunnel = new ApiServerTunnel({
      server: "https://api.example:6443",
      // The API server's refusal of the port-forward, as the WebSocket client words it.
      kubeConfig: async () => {
        throw new Error("Unexpected server response: 404");
      },
      listNodes: async (scope) => {
        scopes.push(scope);
        return [node("cp-a", ["192.168.0.1"])];
      },
      machineNode: (host) => (host === "10.0.0.1" ? "cp-a" : undefined),
      podExists: async () => false,
      openTimeoutMs: 1_000,
      now: () => 0,
    });
    try {
      const endpoint = "https://10.0.0.1:2379";
      await connectionThrough((await tunnel.dial(endpoint)).url);
      assert.match(
        tunnel.explain(endpoint, 0, "connection closed"),
        /port-forward to pod kube-system\/etcd-cp-a \(node cp-a\) port 2379 failed: pod kube-system\/etcd-cp-a not found \(HTTP 404\): Node cp-a is the nodeRef of the Machine with the member's address 10\.0\.0\.1/,
      );
      assert.deepEqual(scopes, [], "no Node list is needed for a member whose Machine names its Node");
      const unknown = "https://10.0.0.9:2379";
      await connectionThrough((await tunnel.dial(unknown)).url);
      assert.match(
        tunnel.explain(unknown, 0, "connection closed"),
        /no Node of the workload cluster has the address 10\.0\.0\.9 \(1 Nodes listed\) and no Machine with that address has a Node/,
      );
    } finally {
      await tunnel.close();
    }
  });

  it("reports a Node list that fails as the member's error, and asks again only after the interval", async () => {
    let lists = 0;
    const tunnel = new ApiServerTunnel({
      server: "https://api.example:6443",
      kubeConfig: () => assert.fail("no port-forward is opened without a Node"),
      listNodes: async () => {
        lists++;
        throw new Error("workload API server https://api.example:6443 did not answer within 10000 ms (list Nodes)");
      },
      podExists: async () => undefined,
      openTimeoutMs: 1_000,
      now: () => 0,
    });
    try {
      const { url } = await tunnel.dial("https://10.0.0.1:2379");
      await connectionThrough(url);
      await connectionThrough(url);
      assert.equal(lists, 1);
      assert.match(
        tunnel.explain("https://10.0.0.1:2379", 0, "connection closed"),
        /Nodes could not be listed to find the member's pod: workload API server .* did not answer/,
      );
    } finally {
      await tunnel.close();
    }
  });
});
