// Leader election and the manager's leadership terms against a real kube-apiserver: one leader at a time,
// takeover after a killed holder's Lease expires, immediate handover on graceful release, and a holder that
// finds the Lease handed to someone else stops while the new holder's controllers receive events.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { repoRoot, startApiServer, startProcess, type ApiServer, type ManagedProcess } from "../env/index.ts";
import { freshNamespace, waitFor } from "./fixtures/kube.ts";
import { LEASE_RESOURCE, LeaderElector, kubeLeaseClient, type Lease } from "../../src/adapters/kube/leader.ts";
import { Manager, type ManagerEvent } from "../../src/adapters/kube/manager.ts";
import { KubeRest, isConflict, resourcePath, type ResourceRef } from "../../src/adapters/kube/rest.ts";

const CONFIGMAPS: ResourceRef = { group: "", version: "v1", plural: "configmaps", namespaced: true };
const LEASE_NAME = "quorum-test";
/** Short enough for a quick test; each step far enough apart that a loaded 2-core machine keeps up. */
const timings = { leaseDurationMs: 8_000, renewDeadlineMs: 5_000, retryPeriodMs: 1_000 };

let apiServer: ApiServer;
let rest: KubeRest;
const processes: ManagedProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  apiServer = await startApiServer();
  rest = new KubeRest(apiServer.kubeConfig);
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await Promise.all(processes.map((p) => p.kill()));
  rest?.close();
  await apiServer?.stop();
});

const newNamespace = () => freshNamespace(rest, "leader");

const readLease = (namespace: string) => rest.get<Lease>(resourcePath(LEASE_RESOURCE, namespace, LEASE_NAME));

function createConfigMap(namespace: string, name: string) {
  return rest.request("POST", resourcePath(CONFIGMAPS, namespace), {
    body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data: { v: "1" } },
  });
}

/** An in-process elector that records when it led. */
function inProcessElector(namespace: string, identity: string) {
  const terms: { from: number; to?: number }[] = [];
  const elector = new LeaderElector({
    ...timings,
    lease: kubeLeaseClient(rest, namespace, LEASE_NAME),
    identity,
    onStartedLeading: () => void terms.push({ from: Date.now() }),
    onStoppedLeading: () => {
      const open = terms.at(-1);
      if (open && open.to === undefined) open.to = Date.now();
    },
  });
  elector.start();
  cleanups.push(() => elector.stop({ release: false }));
  return { elector, terms };
}

interface LoggedStep {
  at: number;
  who: string;
  type: string;
  key?: string;
}

/** An in-process manager with one ConfigMap controller; steps and reconciles go into `log`. */
function inProcessManager(namespace: string, identity: string, log: LoggedStep[]) {
  const manager = new Manager({
    rest,
    controllers: [
      {
        name: "configmaps",
        watches: [{ target: { resource: CONFIGMAPS, namespace } }],
        reconcile: async (key) => void log.push({ at: Date.now(), who: identity, type: "reconciled", key }),
      },
    ],
    leaderElection: { namespace, name: LEASE_NAME, identity, ...timings },
    onEvent: (event: ManagerEvent) => log.push({ at: Date.now(), who: identity, type: event.type }),
  });
  manager.start();
  cleanups.push(() => manager.stop());
  return manager;
}

/** The fixture process: a manager campaigning for the Lease in `namespace`. */
function managerProcess(namespace: string, identity: string): ManagedProcess {
  const proc = startProcess({
    name: `lease-manager ${identity}`,
    command: process.execPath,
    args: ["--import", "tsx", join(repoRoot, "test/integration/fixtures/lease-manager.ts")],
    cwd: repoRoot,
    env: {
      ...process.env,
      KUBECONFIG_PATH: apiServer.kubeconfigPath,
      NAMESPACE: namespace,
      LEASE_NAME,
      IDENTITY: identity,
      LEASE_DURATION_MS: String(timings.leaseDurationMs),
      RENEW_DEADLINE_MS: String(timings.renewDeadlineMs),
      RETRY_PERIOD_MS: String(timings.retryPeriodMs),
    },
  });
  processes.push(proc);
  return proc;
}

function stepsOf(proc: ManagedProcess): LoggedStep[] {
  return readFileSync(proc.logFile, "utf8")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as LoggedStep);
}

const TERM_START = [
  "started-leading",
  "handlers-registered",
  "starting-informers",
  "caches-synced",
  "starting-workers",
];

describe("leader election against a real kube-apiserver", { timeout: 300_000 }, () => {
  it("lets only one of two electors lead, and records it in the Lease with microsecond timestamps", async () => {
    const namespace = await newNamespace();
    const a = inProcessElector(namespace, "elector-a");
    const b = inProcessElector(namespace, "elector-b");
    await waitFor("a leader", () => a.elector.isLeader() || b.elector.isLeader());
    const observeUntil = Date.now() + 5_000;
    while (Date.now() < observeUntil) {
      assert.ok(!(a.elector.isLeader() && b.elector.isLeader()), "both electors lead at once");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const leaders = [a, b].filter((e) => e.terms.length > 0);
    assert.equal(leaders.length, 1, "leadership changed hands without any failure");
    const leader = leaders[0];
    assert.equal(leader.terms.length, 1);
    const lease = await readLease(namespace);
    assert.equal(lease.spec?.holderIdentity, leader.elector.identity);
    assert.equal(lease.spec?.leaseDurationSeconds, timings.leaseDurationMs / 1000);
    assert.match(lease.spec?.renewTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.match(lease.spec?.acquireTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it("lets a standby take over from a killed holder only once the Lease has expired", async () => {
    const namespace = await newNamespace();
    const holder = managerProcess(namespace, "process-holder");
    await waitFor(
      "the process to hold the Lease",
      async () => (await readLease(namespace).catch(() => undefined))?.spec?.holderIdentity === "process-holder",
    );
    const standby = inProcessElector(namespace, "standby");
    // Let the standby observe a few renewals, so its clock for the Lease is running.
    await new Promise((resolve) => setTimeout(resolve, 3 * timings.retryPeriodMs));
    assert.equal(standby.elector.isLeader(), false);

    const killedAt = Date.now();
    await holder.kill();
    await waitFor("the standby to lead", () => standby.elector.isLeader());
    const takeoverMs = standby.terms[0].from - killedAt;
    // The killed holder's last renewal was at most one retry period before the kill; the Lease is valid for
    // leaseDuration after the standby saw that renewal. Taking over sooner could mean two leaders.
    assert.ok(
      takeoverMs >= timings.leaseDurationMs - timings.retryPeriodMs - 500,
      `took over ${takeoverMs} ms after the kill, before the Lease could have expired`,
    );
    const lease = await readLease(namespace);
    assert.equal(lease.spec?.holderIdentity, "standby");
    assert.equal(lease.spec?.leaseTransitions, 1);
  });

  it("hands over at once, without waiting for expiry, when the holder shuts down gracefully on SIGTERM", async () => {
    const namespace = await newNamespace();
    const holder = managerProcess(namespace, "graceful-holder");
    await waitFor("the process to start its workers", () => stepsOf(holder).some((s) => s.type === "starting-workers"));
    const log: LoggedStep[] = [];
    const standby = inProcessManager(namespace, "standby", log);
    await new Promise((resolve) => setTimeout(resolve, 2 * timings.retryPeriodMs));
    assert.equal(standby.isLeader(), false);

    const terminatedAt = Date.now();
    const exit = await holder.stop(20_000);
    assert.deepEqual(exit, { code: 0, signal: null }, `the holder did not exit cleanly:\n${holder.lastLogLines()}`);
    await waitFor("the standby to start its workers", () => log.some((s) => s.type === "starting-workers"));
    const takeoverMs = log.find((s) => s.type === "started-leading")!.at - terminatedAt;
    assert.ok(
      takeoverMs < timings.leaseDurationMs - timings.retryPeriodMs,
      `the standby took ${takeoverMs} ms: it waited for the Lease to expire instead of seeing it released`,
    );
    const holderSteps = stepsOf(holder).map((s) => s.type);
    assert.deepEqual(holderSteps.slice(holderSteps.indexOf("stopped-leading")), [
      "stopped-leading",
      "workers-stopped",
      "informers-stopped",
      "stopped",
    ]);
  });

  it("stops a holder whose Lease is handed to the standby, and the standby's controllers then receive events", async () => {
    const namespace = await newNamespace();
    await createConfigMap(namespace, "before-handover");
    const log: LoggedStep[] = [];
    const first = inProcessManager(namespace, "first", log);
    await waitFor("the first manager to start its workers", () =>
      log.some((s) => s.who === "first" && s.type === "starting-workers"),
    );
    await waitFor("the first manager to reconcile the existing ConfigMap", () =>
      log.some((s) => s.who === "first" && s.type === "reconciled"),
    );
    const second = inProcessManager(namespace, "second", log);
    await new Promise((resolve) => setTimeout(resolve, 2 * timings.retryPeriodMs));
    assert.equal(second.isLeader(), false);

    // What k3s hit: the Lease ends up naming another process. Write it like an operator's `kubectl edit`.
    for (;;) {
      const lease = await readLease(namespace);
      try {
        await rest.request("PUT", resourcePath(LEASE_RESOURCE, namespace, LEASE_NAME), {
          body: { ...lease, spec: { ...lease.spec, holderIdentity: "second" } },
        });
        break;
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
    await waitFor("the first manager to stop its informers", () =>
      log.some((s) => s.who === "first" && s.type === "informers-stopped"),
    );
    await waitFor("the second manager to start its workers", () =>
      log.some((s) => s.who === "second" && s.type === "starting-workers"),
    );
    await createConfigMap(namespace, "after-handover");
    await waitFor("the second manager to reconcile the new ConfigMap", () =>
      log.some((s) => s.who === "second" && s.key === `${namespace}/after-handover`),
    );

    const stepsOfFirst = log.filter((s) => s.who === "first" && s.type !== "reconciled").map((s) => s.type);
    assert.deepEqual(stepsOfFirst, [
      "campaigning",
      ...TERM_START,
      "stopped-leading",
      "workers-stopped",
      "informers-stopped",
    ]);
    const stepsOfSecond = log
      .filter((s) => s.who === "second")
      .map((s) => (s.type === "reconciled" ? `reconciled ${s.key}` : s.type));
    assert.deepEqual(stepsOfSecond.slice(0, 6), ["campaigning", ...TERM_START], "register, start, sync, then work");
    assert.ok(
      stepsOfSecond.includes(`reconciled ${namespace}/before-handover`),
      "the synced cache's objects are reconciled",
    );

    const firstStoppedAt = log.find((s) => s.who === "first" && s.type === "stopped-leading")!.at;
    const lateWork = log.filter((s) => s.who === "first" && s.type === "reconciled" && s.at > firstStoppedAt);
    assert.deepEqual(lateWork, [], "the old holder must not act after it stopped leading");

    await new Promise((resolve) => setTimeout(resolve, 2 * timings.retryPeriodMs));
    assert.equal(first.isLeader(), false, "the old holder stays a standby while the new one renews");
    assert.equal((await readLease(namespace)).spec?.holderIdentity, "second");
  });

  it("gives up leadership, naming the cache, when a cache cannot sync within the bound, and never starts its workers", async () => {
    const namespace = await newNamespace();
    const log: LoggedStep[] = [];
    const lost: { at: number; reason: string }[] = [];
    // A resource the API server does not serve: every list is a 404, so this cache never syncs.
    const missing: ResourceRef = { group: "nothing.quorum.test", version: "v1", plural: "ghosts", namespaced: true };
    const manager = new Manager({
      rest,
      controllers: [
        {
          name: "ghosts",
          watches: [{ target: { resource: missing, namespace } }, { target: { resource: CONFIGMAPS, namespace } }],
          reconcile: async (key) => void log.push({ at: Date.now(), who: "blind", type: "reconciled", key }),
        },
      ],
      leaderElection: { namespace, name: LEASE_NAME, identity: "blind", ...timings },
      cacheSyncTimeoutMs: 3_000,
      onLostLeadership: (reason) => void lost.push({ at: Date.now(), reason }),
      onEvent: (event: ManagerEvent) => log.push({ at: Date.now(), who: "blind", type: event.type }),
    });
    manager.start();
    cleanups.push(() => manager.stop());
    await waitFor("the manager to give up its term", () => lost.length > 0);
    const startedAt = log.find((s) => s.type === "starting-informers")!.at;
    const gaveUpAfterMs = lost[0].at - startedAt;
    assert.ok(gaveUpAfterMs >= 2_900 && gaveUpAfterMs < 8_000, `gave up ${gaveUpAfterMs} ms after starting informers`);
    assert.match(lost[0].reason, /caches not synced within 3000 ms \(ghosts\.nothing\.quorum\.test in namespace /);
    assert.doesNotMatch(lost[0].reason, /configmaps/, "only the cache that did not sync is named");
    await waitFor("the term to end", () => log.some((s) => s.type === "informers-stopped"));
    assert.ok(!log.some((s) => s.type === "starting-workers" || s.type === "reconciled"), "no worker ran");
  });
});
