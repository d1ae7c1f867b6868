// Two and three controller processes with --leader-elect on one real kube-apiserver: only the Lease holder acts;
// SIGKILL of the holder mid-rollout hands over within 20 s and the rollout finishes; rewriting the Lease's holder
// makes the old holder exit and the new one receive events and act (the k3s lease-mismatch bug); a holder cut off
// from the API server while it still reaches etcd, with a rollout step in flight, exits by its renew deadline and
// makes no etcd change or API write after it, and the standby finishes the rollout.
//
// Each controller reaches the API server through a TCP proxy of its own and as its own user (its identity), so the
// API server's audit log tells the replicas' writes apart.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { readFileSync } from "node:fs";
import { createEtcdClusterClient } from "../../src/adapters/etcd/client.ts";
import { kubeRequest, kubeRequestOk } from "../env/kube.ts";
import { startStack, type ControllerProcess, type ControllerStack, type QuorumMonitor } from "./controller/stack.ts";
import type { MachinePlayer } from "./controller/player.ts";

const NS = "leader";
const NAME = "c3";
const LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/quorum-test-leader";

interface Lease {
  metadata: { resourceVersion: string };
  spec: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number; leaseTransitions?: number };
}

async function scrape(controller: ControllerProcess): Promise<{ actions: number; leader: number }> {
  const text = await fetch(controller.metricsUrl).then((response) => response.text());
  const sum = (name: string) =>
    text
      .split("\n")
      .filter((line) => line.startsWith(name) && !line.startsWith("#"))
      .reduce((total, line) => total + Number(line.split(" ").pop()), 0);
  return { actions: sum("quorum_actions_total"), leader: sum("quorum_leader ") };
}

/** client-go's renew deadline, the controller's default: a holder that could not renew for this long stops. */
const RENEW_DEADLINE_MS = 10_000;

interface AuditEvent {
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; name?: string };
  requestReceivedTimestamp: string;
}

/** When a controller wrote `message` to its log (text format: the timestamp leads each line), or undefined. */
function loggedAt(controller: ControllerProcess, message: string): number | undefined {
  const line = readFileSync(controller.process.logFile, "utf8")
    .split("\n")
    .find((text) => text.includes(message));
  return line === undefined ? undefined : Date.parse(line.split(" ")[0] ?? "");
}

/** Records the etcd member list every 100 ms, with when each change was first seen. */
class MembershipLog {
  readonly changes: { at: number; members: string[] }[] = [];
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(private readonly player: MachinePlayer) {
    this.loop = this.run();
  }

  get current(): string[] {
    return this.changes.at(-1)?.members ?? [];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const etcd = this.player.etcd;
      const endpoints = this.player.liveEndpoints();
      if (etcd && endpoints.length > 0) {
        const client = createEtcdClusterClient({
          endpoints,
          credentials: {
            caPem: etcd.credentials.caPem,
            certPem: etcd.credentials.certPem,
            keyPem: etcd.credentials.keyPem,
          },
          callDeadlineMs: 2_000,
          context: "membership log",
        });
        try {
          const members = (await client.listMembers()).map(
            (member) => `${member.name}${member.learner ? " (learner)" : ""}`,
          );
          members.sort();
          if (members.join() !== this.current.join()) this.changes.push({ at: Date.now(), members });
        } catch {
          // No member answered this round; the next one asks again.
        } finally {
          await client.close();
        }
      }
      await sleep(100);
    }
  }
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

describe("leader election between controller processes", { timeout: 900_000 }, () => {
  let stack: ControllerStack;
  let player: MachinePlayer;
  let monitor: QuorumMonitor;
  const byIdentity = new Map<string, ControllerProcess>();

  before(async () => {
    stack = await startStack({ audit: true, capi: true });
    player = await stack.createCluster(NS, NAME, { replicas: 3, version: "v1.31.0" });
    monitor = stack.monitor(player);
    for (const identity of ["quorum-a", "quorum-b"]) byIdentity.set(identity, await startReplica(identity));
  });

  after(async () => {
    await stack?.stop();
  });

  function startReplica(identity: string): Promise<ControllerProcess> {
    return stack.startController({ leaderElect: true, identity, username: identity, viaProxy: true });
  }

  async function holder(): Promise<string | undefined> {
    return (await kubeRequestOk<Lease>(stack.kubeConfig, LEASE)).spec.holderIdentity;
  }

  it("lets only the Lease holder act", async () => {
    await stack.waitConverged(NS, NAME, 3);
    const leader = await holder();
    assert.ok(leader && byIdentity.has(leader), `holder ${leader}`);
    const standby = [...byIdentity.keys()].find((identity) => identity !== leader) as string;
    const [leaderMetrics, standbyMetrics] = await Promise.all([
      scrape(byIdentity.get(leader) as ControllerProcess),
      scrape(byIdentity.get(standby) as ControllerProcess),
    ]);
    assert.ok(leaderMetrics.actions >= 3, `the holder created the Machines (${leaderMetrics.actions} actions)`);
    assert.equal(standbyMetrics.actions, 0, "the standby never acted");
    assert.equal(leaderMetrics.leader, 1);
    assert.equal(standbyMetrics.leader, 0);
  });

  it("hands over within 20 s when the holder is SIGKILLed mid-rollout, and the new holder finishes the rollout", async () => {
    const leader = (await holder()) as string;
    const standby = [...byIdentity.keys()].find((identity) => identity !== leader) as string;
    const original = new Set((await stack.machines(NS, NAME)).map((machine) => machine.metadata.name));
    await stack.patchSpec(NS, NAME, { version: "v1.32.0" });
    await until("the rollout's first new Machine", 60_000, async () =>
      (await stack.machines(NS, NAME)).some((machine) => !original.has(machine.metadata.name)) ? true : undefined,
    );
    const killedAt = Date.now();
    await (byIdentity.get(leader) as ControllerProcess).process.kill();
    await until(`${standby} holding the Lease`, 20_000, async () => ((await holder()) === standby ? true : undefined));
    const handoverMs = Date.now() - killedAt;
    assert.ok(handoverMs <= 20_000, `hand-over took ${handoverMs} ms`);
    await stack.waitConverged(NS, NAME, 3, 240_000);
    assert.ok((await scrape(byIdentity.get(standby) as ControllerProcess)).actions > 0, "the new holder acted");
    assert.deepEqual(player.deletedWithMember, []);
    assert.deepEqual(monitor.losses, []);
    byIdentity.delete(leader);
  });

  it("makes the old holder exit and starts the new one when the Lease holder is rewritten, and the new one acts on events", async () => {
    const old = (await holder()) as string;
    const oldProcess = byIdentity.get(old) as ControllerProcess;
    const fresh = await startReplica("quorum-c");
    byIdentity.set("quorum-c", fresh);
    await until("quorum-c serving metrics", 60_000, async () =>
      (await scrape(fresh)).leader === 0 ? true : undefined,
    );

    // Like an operator's `kubectl edit`: read, write, and read again when the holder renewed in between (409).
    for (;;) {
      const lease = await kubeRequestOk<Lease>(stack.kubeConfig, LEASE);
      const renewTime = new Date().toISOString().replace("Z", "000Z");
      const written = await kubeRequest(stack.kubeConfig, LEASE, {
        method: "PUT",
        body: { ...lease, spec: { ...lease.spec, holderIdentity: "quorum-c", renewTime } },
      });
      if (written.status === 200) break;
      assert.equal(written.status, 409, written.text.slice(0, 300));
    }

    // It exits (as controller-runtime does) rather than stopping its workers: a reconcile in flight ends with it.
    const exit = await until(`${old} exiting`, 15_000, async () => oldProcess.process.exitStatus());
    assert.equal(exit.code, 1, oldProcess.process.lastLogLines(10));
    assert.match(oldProcess.process.lastLogLines(5), /leadership lost: exiting/);
    byIdentity.delete(old);
    await until("quorum-c running its workers", 30_000, async () =>
      (await scrape(fresh)).leader === 1 ? true : undefined,
    );

    // An event the new holder must receive: its informers started after it registered its handlers.
    await stack.patchSpec(NS, NAME, { replicas: 5 });
    await stack.waitConverged(NS, NAME, 5, 240_000);
    assert.ok((await scrape(fresh)).actions >= 2, "the new holder created the two Machines");
    assert.equal(await holder(), "quorum-c");
    assert.deepEqual(monitor.losses, []);
  });

  it("stops a holder cut off from the API server, with a rollout step in flight, by its renew deadline: no etcd change or API write after it, and the standby finishes the rollout", async (t) => {
    const leaderIdentity = (await holder()) as string;
    const leader = byIdentity.get(leaderIdentity) as ControllerProcess;
    assert.ok(leader.proxy, "every replica reaches the API server through its own proxy");
    const standby = await startReplica("quorum-d");
    byIdentity.set("quorum-d", standby);
    await until("quorum-d serving metrics", 60_000, async () =>
      (await scrape(standby)).leader === 0 ? true : undefined,
    );
    const replicas = (await stack.getControlPlane(NS, NAME)).spec.replicas ?? 1;

    const membership = new MembershipLog(player);
    let successor: ControllerProcess | undefined;
    let cutAt = 0;
    let lostAt: number | undefined;
    try {
      await until("the etcd member list", 30_000, async () =>
        membership.current.length === replicas ? true : undefined,
      );
      await stack.patchSpec(NS, NAME, { version: "v1.33.0" });
      // The rollout's first removal: the leader has just taken a member out of etcd and its next steps (delete that
      // Machine, write status) are in flight when it loses the API server; etcd stays reachable for it throughout.
      await until("the rollout's first member removal", 180_000, async () =>
        membership.changes.some(
          (change, i) => i > 0 && change.members.length < (membership.changes[i - 1]?.members.length ?? 0),
        )
          ? true
          : undefined,
      );
      leader.proxy.blackHole();
      cutAt = Date.now();

      const exit = await until(`${leaderIdentity} exiting`, RENEW_DEADLINE_MS + 15_000, async () =>
        leader.process.exitStatus(),
      );
      assert.equal(exit.code, 1, leader.process.lastLogLines(10));
      const exitLoggedAt = loggedAt(leader, "leadership lost: exiting");
      assert.ok(exitLoggedAt !== undefined, leader.process.lastLogLines(10));
      lostAt = exitLoggedAt;
      t.diagnostic(
        `${leaderIdentity} exited ${exitLoggedAt - cutAt} ms after the cut; its last lines:\n${leader.process.lastLogLines(8)}`,
      );
      // Its last renewal was sent before the cut, so its deadline fell at most RENEW_DEADLINE_MS after it.
      assert.ok(lostAt - cutAt <= RENEW_DEADLINE_MS + 1_500, `exited ${lostAt - cutAt} ms after the cut`);

      // Any standby may win the Lease (quorum-d, or an earlier replica still waiting).
      const successorIdentity = await until("a standby holding the Lease", 30_000, async () => {
        const current = await holder();
        return current !== undefined && current !== leaderIdentity && byIdentity.has(current) ? current : undefined;
      });
      successor = byIdentity.get(successorIdentity) as ControllerProcess;
      const standbyLeadingAt = loggedAt(successor, "leader election: became leader") as number;
      // From here a deposed leader that had survived could reach the API server again.
      leader.proxy.heal();
      await stack.waitConverged(NS, NAME, replicas, 300_000);

      const deposed = membership.changes.filter(
        (change) => change.at > exitLoggedAt + 1_000 && change.at < standbyLeadingAt,
      );
      assert.deepEqual(
        deposed,
        [],
        "etcd membership changed after the deposed leader's deadline, before the standby led",
      );
    } finally {
      await membership.stop();
    }

    const audit = readFileSync(stack.auditLog as string, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as AuditEvent)
      .filter((event) => event.verb !== "get" && event.verb !== "list" && event.verb !== "watch");
    const machineWrites = (username: string) =>
      audit.filter((event) => event.user.username === username && event.objectRef?.resource === "machines");
    assert.ok(machineWrites(leaderIdentity).length > 0, "the audit log attributes the old leader's Machine writes");
    const late = audit.filter(
      (event) =>
        event.user.username === leaderIdentity && Date.parse(event.requestReceivedTimestamp) > (lostAt as number),
    );
    assert.deepEqual(
      late.map((event) => `${event.verb} ${event.objectRef?.resource}/${event.objectRef?.name}`),
      [],
      "writes by the deposed leader after its deadline",
    );
    assert.ok(successor, "a standby took over");
    assert.ok(
      machineWrites(successor.identity).some((event) => Date.parse(event.requestReceivedTimestamp) > cutAt),
      "the standby wrote Machines to finish the rollout",
    );
    assert.ok((await scrape(successor)).actions > 0, "the standby acted");
    byIdentity.delete(leaderIdentity);
    assert.deepEqual(player.deletedWithMember, []);
    assert.deepEqual(monitor.losses, []);
  });
});
