// Two Quorum replicas with leader election. During one rolling upgrade the leader is SIGKILLed after its first
// promotion (the standby takes over once the Lease expires and finishes the rollout; the killed replica comes back
// as a standby). During a second upgrade the Lease's holder is rewritten to name the standby, as an operator's
// `kubectl edit` would: the old leader must stop acting and the named one must take over and finish. At no time do
// two replicas act.
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { kubeRequest, kubeRequestOk } from "../../test/env/index.ts";
import type { Scenario } from "../lib/scenario.ts";
import type { QuorumProcess } from "../lib/stack.ts";
import { NEXT_VERSION, VERSION, type ScenarioDefinition } from "./types.ts";

const LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases/quorum-controller-leader";
const THIRD_VERSION = "v1.37.4";

interface LogLine {
  message?: string;
  identity?: string;
  timestamp?: string;
}

function logLines(quorum: QuorumProcess): LogLine[] {
  return readFileSync(quorum.logFile, "utf8")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        return {};
      }
    });
}

function identityOf(quorum: QuorumProcess): string | undefined {
  return logLines(quorum).find((line) => line.message?.startsWith("leader election:") && line.identity)?.identity;
}

/** The replica that logged "became leader" last and has not logged "stopped leading" since. */
function currentLeader(quorums: QuorumProcess[]): QuorumProcess | undefined {
  let best: { quorum: QuorumProcess; at: number } | undefined;
  for (const quorum of quorums.filter((candidate) => candidate.process.isRunning())) {
    let leadingSince: number | undefined;
    for (const line of logLines(quorum)) {
      if (line.message === "leader election: became leader") leadingSince = Date.parse(line.timestamp ?? "");
      if (line.message === "leader election: stopped leading") leadingSince = undefined;
    }
    if (leadingSince !== undefined && (!best || leadingSince > best.at)) best = { quorum, at: leadingSince };
  }
  return best?.quorum;
}

async function waitFor<T>(
  s: Scenario,
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await sleep(200);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}\n${s.quorumTail()}`);
}

/** Checks that the actions of different replicas never interleave: each replica's actions form one block per term. */
function overlapping(s: Scenario): string[] {
  const actions = s.controllerActions();
  const problems: string[] = [];
  for (let i = 1; i < actions.length - 1; i++) {
    const [before, action, after] = [actions[i - 1], actions[i], actions[i + 1]];
    if (before.quorum === after.quorum && action.quorum !== before.quorum)
      problems.push(`${action.quorum} acted (${action.kind}) between two actions of ${before.quorum}`);
  }
  return problems;
}

export const leaderElection: ScenarioDefinition = {
  name: "leader-election",
  title: "two Quorum replicas: kill the leader mid-rollout, then rewrite the Lease holder mid-rollout",
  async run(s) {
    await s.setup(
      { replicas: 3, version: VERSION },
      {
        startQuorum: async (stack) => {
          await stack.startQuorum({ leaderElect: true, label: "replica-a" });
          await stack.startQuorum({ leaderElect: true, label: "replica-b" });
        },
      },
    );
    const first = await waitFor(s, "a leader", () => currentLeader(s.stack.quorums));
    s.log(`leader: ${first.label} (${identityOf(first)})`);

    let killedAt = 0;
    await s.operation(
      `upgrade ${VERSION}→${NEXT_VERSION}, leader killed after its first promotion`,
      () => s.patch({ version: NEXT_VERSION }),
      {
        replicas: 3,
        during: async () => {
          await waitFor(s, `${first.label}'s first PromoteLearner`, () =>
            s
              .controllerActions()
              .some(
                (action) =>
                  action.quorum === first.label &&
                  action.kind === "PromoteLearner" &&
                  action.at > (s.userEvents.at(-1)?.at ?? 0),
              )
              ? true
              : undefined,
          );
          const lease = await kubeRequestOk<{ spec: { renewTime?: string; leaseDurationSeconds?: number } }>(
            s.stack.kubeConfig,
            LEASE_PATH,
          );
          await first.process.kill();
          killedAt = Date.now();
          // Waiting out the Lease is designed (client-go timings): the successor's latency counts from its expiry.
          const expiry =
            Date.parse(lease.spec.renewTime ?? new Date(killedAt).toISOString()) +
            (lease.spec.leaseDurationSeconds ?? 15) * 1000;
          s.userEvents.push({ at: Math.max(expiry, killedAt), kind: "lease-expired", subject: first.label });
          s.userEvents.push({ at: killedAt, kind: "leader-killed", subject: first.label });
          s.log(`SIGKILLed the leader ${first.label}; the standby takes over when the Lease expires`);
          const successor = await waitFor(
            s,
            "the standby to lead",
            () => currentLeader(s.stack.quorums.filter((quorum) => quorum !== first)),
            60_000,
          );
          s.log(`${successor.label} leads ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
          s.notes.push(
            `${successor.label} took over ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the leader was killed (Lease duration 15 s)`,
          );
          await s.stack.startQuorum({ leaderElect: true, label: "replica-a2" });
        },
      },
    );
    const lateByKilled = s
      .controllerActions()
      .filter((action) => action.quorum === first.label && action.at > killedAt);
    s.check(lateByKilled.length === 0, "the killed leader took no action after it was killed");
    const afterKill = s.controllerActions().filter((action) => action.at > killedAt);
    s.check(
      afterKill.length > 0 && afterKill.every((action) => action.quorum !== first.label),
      `the new leader finished the rollout (${afterKill.length} actions by ${[...new Set(afterKill.map((action) => action.quorum))].join(", ")})`,
    );

    const leader = await waitFor(s, "a leader", () => currentLeader(s.stack.quorums));
    const standby = s.stack.runningQuorums().find((quorum) => quorum !== leader);
    const standbyIdentity = standby ? identityOf(standby) : undefined;
    if (!standby || !standbyIdentity) throw new Error("no standby replica with a known identity");
    let rewrittenAt = 0;
    await s.operation(
      `upgrade ${NEXT_VERSION}→${THIRD_VERSION}, Lease holder rewritten to the standby`,
      () => s.patch({ version: THIRD_VERSION }),
      {
        replicas: 3,
        during: async () => {
          await waitFor(s, `${leader.label}'s first action of this rollout`, () =>
            s
              .controllerActions()
              .some((action) => action.quorum === leader.label && action.at > (s.userEvents.at(-1)?.at ?? 0))
              ? true
              : undefined,
          );
          for (;;) {
            const lease = await kubeRequestOk<{ metadata: Record<string, unknown>; spec: Record<string, unknown> }>(
              s.stack.kubeConfig,
              LEASE_PATH,
            );
            const written = await kubeRequest(s.stack.kubeConfig, LEASE_PATH, {
              method: "PUT",
              body: { ...lease, spec: { ...lease.spec, holderIdentity: standbyIdentity } },
            });
            if (written.status === 200) break;
            if (written.status !== 409)
              throw new Error(`rewriting the Lease failed with HTTP ${written.status}: ${written.text.slice(0, 300)}`);
          }
          rewrittenAt = Date.now();
          s.userEvents.push({ at: rewrittenAt, kind: "lease-rewritten", subject: standby.label });
          s.log(`rewrote the Lease holder from ${leader.label} to ${standby.label}`);
          await waitFor(s, `${standby.label} to lead`, () => (currentLeader([standby]) ? true : undefined), 60_000);
          await waitFor(
            s,
            `${leader.label} to stop leading`,
            () => (currentLeader([leader]) ? undefined : true),
            60_000,
          );
          s.log(`${standby.label} leads; ${leader.label} stopped leading`);
        },
      },
    );
    const stoppedAt =
      logLines(leader)
        .filter((line) => line.message === "leader election: stopped leading")
        .map((line) => Date.parse(line.timestamp ?? ""))
        .find((at) => at >= rewrittenAt - 1_000) ?? Infinity;
    const lateByOld = s.controllerActions().filter((action) => action.quorum === leader.label && action.at > stoppedAt);
    s.check(
      Number.isFinite(stoppedAt),
      `${leader.label} noticed the rewritten Lease and stopped leading (${Number.isFinite(stoppedAt) ? `${((stoppedAt - rewrittenAt) / 1000).toFixed(1)} s after the rewrite` : "never"})`,
    );
    s.check(lateByOld.length === 0, `${leader.label} took no action after it stopped leading`);
    s.check(
      s.controllerActions().some((action) => action.quorum === standby.label && action.at > rewrittenAt),
      `${standby.label}, named by the Lease, acted and finished the rollout`,
    );
    const overlaps = overlapping(s);
    s.check(
      overlaps.length === 0,
      `no two replicas acted at once (${overlaps.join("; ") || "actions come in one block per leader term"})`,
    );
    return 3;
  },
};
