// The per-cluster etcd client pool, with a counting fake factory: what it opens and closes across reconciles.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EtcdClientPool } from "../../../../src/adapters/etcd/pool.ts";
import type {
  EtcdClientCredentials,
  EtcdClientOptions,
  EtcdTunnelFactory,
} from "../../../../src/adapters/etcd/types.ts";
import { silentLogger, type Logger } from "../../../../src/adapters/kube/log.ts";
import { FakeEtcdClients } from "./fake-clients.ts";

const credentials: EtcdClientCredentials = { caPem: "ca-1", certPem: "cert-1", keyPem: "key-1" };
const endpoints = ["https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"];

function optionsFor(cluster: string, overrides: Partial<EtcdClientOptions> = {}): EtcdClientOptions {
  return { endpoints, credentials, callDeadlineMs: 1000, context: `etcd of cluster ${cluster}`, ...overrides };
}

/** A tunnel factory the fake clients never open; only its identity matters to the pool. */
function tunnelVia(server: string): EtcdTunnelFactory {
  return {
    identity: `APIServerProxy via ${server}`,
    open: () => assert.fail("the pool must leave opening the tunnel to the client"),
  };
}

function pool(fakes: FakeEtcdClients, extra: { now?: () => number; log?: Logger; idleCloseMs?: number } = {}) {
  return new EtcdClientPool({ factory: fakes.factory, log: extra.log ?? silentLogger, idleSweep: false, ...extra });
}

/** One reconcile as the controller runs it: lease, use, close in a finally block. */
async function reconcile(etcdClients: EtcdClientPool, key: string, options: EtcdClientOptions): Promise<string> {
  const etcd = await etcdClients.acquire(key, options);
  try {
    return (await etcd.listMembers())[0].name;
  } finally {
    await etcd.close();
  }
}

describe("etcd client pool", () => {
  it("keeps one client per cluster across reconciles instead of opening one per reconcile", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")));
    assert.deepEqual(seen, ["client-1", "client-1", "client-1", "client-1", "client-1"]);
    assert.equal(fakes.opened.length, 1);
    assert.equal(fakes.opened[0].closes, 0);
  });

  it("gives each cluster its own client", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")), "client-1");
    assert.equal(await reconcile(etcdClients, "team-b/prod", optionsFor("team-b/prod")), "client-2");
    assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")), "client-1");
    assert.deepEqual(
      fakes.opened.map((client) => client.options.context),
      ["etcd of cluster team-a/prod", "etcd of cluster team-b/prod"],
    );
    assert.equal(etcdClients.size, 2);
  });

  it("reuses the client when the same endpoints come in another order or spelling", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod"));
    await reconcile(
      etcdClients,
      "team-a/prod",
      optionsFor("team-a/prod", { endpoints: ["10.0.0.3:2379", "https://10.0.0.1:2379/", "https://10.0.0.2:2379"] }),
    );
    assert.equal(fakes.opened.length, 1);
  });

  const changes: { change: string; options: Partial<EtcdClientOptions> }[] = [
    { change: "a Machine joined (one more endpoint)", options: { endpoints: [...endpoints, "https://10.0.0.4:2379"] } },
    { change: "a Machine left (one endpoint fewer)", options: { endpoints: endpoints.slice(1) } },
    {
      change: "the client certificate was renewed",
      options: { credentials: { ...credentials, certPem: "cert-2", keyPem: "key-2" } },
    },
    { change: "the etcd CA was rotated", options: { credentials: { ...credentials, caPem: "ca-2" } } },
    { change: "spec.etcd.access switched from Direct to APIServerProxy", options: { tunnel: tunnelVia("api-1") } },
  ];
  for (const { change, options } of changes) {
    it(`closes the kept client and opens a new one when ${change}`, async () => {
      const fakes = new FakeEtcdClients();
      const etcdClients = pool(fakes);
      await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod"));
      assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod", options)), "client-2");
      assert.deepEqual(
        fakes.opened.map((client) => client.closes),
        [1, 0],
      );
      assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod", options)), "client-2");
      assert.equal(fakes.opened.length, 2);
    });
  }

  it("replaces the client when APIServerProxy goes back to Direct or to another API server, and keeps it otherwise", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    const proxied = () => optionsFor("team-a/prod", { tunnel: tunnelVia("api-1") });
    assert.equal(await reconcile(etcdClients, "team-a/prod", proxied()), "client-1");
    assert.equal(await reconcile(etcdClients, "team-a/prod", proxied()), "client-1");
    assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")), "client-2");
    assert.equal(await reconcile(etcdClients, "team-a/prod", proxied()), "client-3");
    const otherServer = optionsFor("team-a/prod", { tunnel: tunnelVia("api-2") });
    assert.equal(await reconcile(etcdClients, "team-a/prod", otherServer), "client-4");
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 1, 1, 0],
    );
  });

  it("keeps the client when the credentials are new objects with the same content", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod"));
    await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod", { credentials: { ...credentials } }));
    assert.equal(fakes.opened.length, 1);
  });

  it("closes a forgotten cluster's client, and opens a new one if the cluster comes back", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod"));
    await reconcile(etcdClients, "team-b/prod", optionsFor("team-b/prod"));
    await etcdClients.forget("team-a/prod");
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 0],
    );
    await etcdClients.forget("team-a/prod");
    assert.equal(fakes.opened[0].closes, 1);
    assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")), "client-3");
  });

  it("closes every kept client on closeAll, and opens new ones for reconciles after it", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    for (const key of ["team-a/prod", "team-b/prod", "team-c/prod"]) await reconcile(etcdClients, key, optionsFor(key));
    await etcdClients.closeAll();
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 1, 1],
    );
    assert.equal(etcdClients.size, 0);
    assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")), "client-4");
  });

  it("closes a client that no reconcile used for the idle limit, and only that one", async () => {
    const fakes = new FakeEtcdClients();
    let now = 0;
    const etcdClients = pool(fakes, { now: () => now, idleCloseMs: 120_000 });
    await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod"));
    await reconcile(etcdClients, "team-b/prod", optionsFor("team-b/prod"));
    now = 100_000;
    await reconcile(etcdClients, "team-b/prod", optionsFor("team-b/prod"));
    now = 119_999;
    assert.equal(await etcdClients.closeIdle(), 0);
    now = 120_000;
    assert.equal(await etcdClients.closeIdle(), 1);
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 0],
    );
    assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")), "client-3");
  });

  it("never closes a client under a reconcile that is still running, even when it is idle-old or forgotten", async () => {
    const fakes = new FakeEtcdClients();
    let now = 0;
    const etcdClients = pool(fakes, { now: () => now, idleCloseMs: 1000 });
    const running = await etcdClients.acquire("team-a/prod", optionsFor("team-a/prod"));
    now = 10_000;
    assert.equal(await etcdClients.closeIdle(), 0);
    await etcdClients.forget("team-a/prod");
    assert.equal((await running.listMembers())[0].name, "client-1");
    assert.equal(fakes.opened[0].closes, 0);
    await running.close();
    assert.equal(fakes.opened[0].closes, 1);
  });

  it("closes a replaced client only once the reconcile still holding it is done", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    const first = await etcdClients.acquire("team-a/prod", optionsFor("team-a/prod"));
    const second = await etcdClients.acquire(
      "team-a/prod",
      optionsFor("team-a/prod", { endpoints: endpoints.slice(0, 2) }),
    );
    assert.equal((await first.listMembers())[0].name, "client-1");
    assert.equal((await second.listMembers())[0].name, "client-2");
    assert.equal(fakes.opened[0].closes, 0);
    await first.close();
    assert.deepEqual(
      fakes.opened.map((client) => client.closes),
      [1, 0],
    );
    await second.close();
    assert.equal(fakes.opened[1].closes, 0);
  });

  it("hands the client back once however often close() is called", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    const held = await etcdClients.acquire("team-a/prod", optionsFor("team-a/prod"));
    const stale = await etcdClients.acquire("team-a/prod", optionsFor("team-a/prod"));
    await stale.close();
    await stale.close();
    await etcdClients.forget("team-a/prod");
    assert.equal(fakes.opened[0].closes, 0, "the other reconcile's lease still holds the client");
    await held.close();
    assert.equal(fakes.opened[0].closes, 1);
  });

  it("refuses calls on a client after close(), naming the cluster and what to do instead", async () => {
    const fakes = new FakeEtcdClients();
    const etcdClients = pool(fakes);
    const etcd = await etcdClients.acquire("team-a/prod", optionsFor("team-a/prod"));
    await etcd.close();
    await assert.rejects(
      etcd.listMembers(),
      /^Error: etcd client of cluster team-a\/prod: used after close\(\); ask WorkloadAccess\.etcd\(\) for a new one/,
    );
  });

  it("keeps the working client when a new one cannot be opened for the changed endpoints", async () => {
    const fakes = new FakeEtcdClients();
    let refuse = false;
    const etcdClients = new EtcdClientPool({
      factory: (options) => {
        if (refuse)
          throw new Error(`etcd of cluster team-a/prod: cannot open a client for ${options.endpoints.at(-1)}`);
        return fakes.factory(options);
      },
      log: silentLogger,
      idleSweep: false,
    });
    await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod"));
    refuse = true;
    await assert.rejects(
      etcdClients.acquire(
        "team-a/prod",
        optionsFor("team-a/prod", { endpoints: [...endpoints, "https://10.0.0.9:2379"] }),
      ),
      /cannot open a client for https:\/\/10\.0\.0\.9:2379/,
    );
    assert.equal(await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod")), "client-1");
    assert.equal(fakes.opened[0].closes, 0);
  });

  it("logs a client that fails to close, naming the cluster, without failing the reconcile that replaced it", async () => {
    const fakes = new FakeEtcdClients();
    const warnings: string[] = [];
    const etcdClients = pool(fakes, { log: { ...silentLogger, warn: (message: string) => warnings.push(message) } });
    await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod"));
    fakes.failCloseWith = "socket already destroyed";
    assert.equal(
      await reconcile(etcdClients, "team-a/prod", optionsFor("team-a/prod", { endpoints: endpoints.slice(1) })),
      "client-2",
    );
    assert.deepEqual(warnings, [
      "closing the etcd client of cluster team-a/prod (its endpoints, credentials or access mode changed) failed: socket already destroyed",
    ]);
  });
});
