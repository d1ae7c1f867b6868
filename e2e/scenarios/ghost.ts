// A ghost is injected into a healthy 3-member cluster: a voting member added by hand at an address no Machine has,
// which never starts (3 healthy of 4 voters: the cluster now tolerates no failure). Right after, a rolling upgrade is
// asked for. Quorum must name the ghost in status within one etcd poll interval, take no disruptive step while it is
// there, remove it once its grace period passed and removing it is safe, then carry out the upgrade.
import { setTimeout as sleep } from "node:timers/promises";
import { isDisruptive, type Action } from "../../src/core/actions.ts";
import type { EtcdClusterClient } from "../../src/adapters/etcd/types.ts";
import { NEXT_VERSION, VERSION, type ScenarioDefinition } from "./types.ts";

const GRACE_S = 20;
const POLL_INTERVAL_MS = 1_000;
/** One poll interval, plus one reconcile and status write on a loaded two-core machine. */
const NAMED_WITHIN_MS = POLL_INTERVAL_MS + 1_500;

/**
 * etcd refuses member changes with "unhealthy cluster" for ~5 s after a member joined or leadership moved, and etcd3's
 * breaker then refuses further calls on that client: retry with a fresh client each second. An add whose answer was
 * lost may have been applied, so an "already exists" answer is resolved by finding the member by its peer URL.
 */
async function addGhost(connect: () => EtcdClusterClient, peerURL: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const client = connect();
    try {
      return (await client.addMember([peerURL], { learner: false })).id;
    } catch (error) {
      if (/already exist/i.test(String(error))) {
        const found = (await client.listMembers()).find((member) => member.peerURLs.includes(peerURL));
        if (found) return found.id;
      }
      if (attempt >= 30 || !/unhealthy cluster|already exist|deadline|unavailable/i.test(String(error))) throw error;
    } finally {
      await client.close();
    }
    await sleep(1_000);
  }
}

export const ghost: ScenarioDefinition = {
  name: "ghost",
  title:
    "inject a ghost member, then ask for an upgrade: named within one poll, nothing disruptive, removed after its grace period",
  async run(s) {
    await s.setup({ replicas: 3, version: VERSION, ghostMemberGracePeriod: `${GRACE_S}s` });
    let ghostId = "";
    let injectedAt = 0;
    let namedAt = 0;
    let goneAt = 0;
    let blockingMessage = "";
    const inject = async () => {
      await s.workload.refresh();
      const address = new URL(s.workload.endpoints()[0]).hostname.replace(/\.\d+$/, ".200");
      ghostId = await addGhost(() => s.workload.etcdClient(), `https://${address}:2380`);
      injectedAt = Date.now();
      s.userEvents.push({ at: injectedAt, kind: "ghost-injected", subject: ghostId });
      s.log(
        `injected ghost voter ${ghostId} at https://${address}:2380 (no Machine has that address; it never starts)`,
      );
      for (;;) {
        const qcp = await s.controlPlane();
        const listed = (qcp.status?.etcd?.members ?? []).find((member) => member.id === ghostId);
        if (listed) {
          namedAt = Date.now();
          // The grace period is a designed wait: the removal's latency counts from its end, not from the injection.
          const firstObserved = listed.firstObserved ? Date.parse(listed.firstObserved) : injectedAt;
          s.userEvents.push({ at: firstObserved + GRACE_S * 1000, kind: "ghost-grace-period-over", subject: ghostId });
          s.log(
            `status names the ghost ${((namedAt - injectedAt) / 1000).toFixed(2)} s after injection; next action: "${qcp.status?.nextAction?.message?.slice(0, 200)}"`,
          );
          return;
        }
        await sleep(100);
      }
    };
    // The upgrade is asked for while the ghost is there: none of its disruptive steps may start until the ghost is gone.
    await s.operation(
      `ghost injected, then upgrade ${VERSION}→${NEXT_VERSION}`,
      async () => {
        await inject();
        await s.patch({ version: NEXT_VERSION });
      },
      {
        replicas: 3,
        during: async () => {
          for (;;) {
            const qcp = await s.controlPlane();
            if (!(qcp.status?.etcd?.members ?? []).some((member) => member.id === ghostId)) break;
            const next = `${qcp.status?.nextAction?.message ?? ""} ${qcp.status?.nextAction?.blockedBy ?? ""}`;
            if (
              !blockingMessage &&
              qcp.metadata.generation === qcp.status?.observedGeneration &&
              next.includes(ghostId)
            )
              blockingMessage = next;
            await sleep(100);
          }
          goneAt = Date.now();
          s.log(`the ghost left the member list ${((goneAt - injectedAt) / 1000).toFixed(1)} s after injection`);
        },
      },
    );
    const actions = s.controllerActions();
    const removal = actions.find((action) => action.kind === "RemoveGhost" && action.at > injectedAt);
    const meanwhile = actions.filter((action) => action.decidedAt > injectedAt && action.at < (removal?.at ?? goneAt));
    const disruptive = meanwhile.filter((action) => isDisruptive({ kind: action.kind } as unknown as Action));
    s.notes.push(
      `ghost named after ${namedAt - injectedAt} ms, removed after ${((removal?.at ?? 0) - injectedAt) / 1000} s; actions while it was there: ${meanwhile.map((action) => action.kind).join(", ") || "none"}`,
    );
    s.check(
      namedAt - injectedAt <= NAMED_WITHIN_MS,
      `status listed the ghost ${namedAt - injectedAt} ms after it was added (poll interval ${POLL_INTERVAL_MS} ms; allowed ${NAMED_WITHIN_MS} ms)`,
    );
    s.check(
      disruptive.length === 0,
      `no disruptive step while the ghost was a member (${disruptive.map((action) => `${action.kind}: ${action.message}`).join("; ") || "none taken"})`,
    );
    s.check(
      blockingMessage !== "",
      `while the upgrade waited, status.nextAction named the ghost as what blocks it ("${blockingMessage.slice(0, 240)}")`,
    );
    s.check(removal !== undefined, "Quorum removed the ghost itself (RemoveGhost)");
    s.check(
      removal !== undefined && removal.at - injectedAt >= GRACE_S * 1000,
      `the ghost was removed only after its ${GRACE_S} s grace period (${(((removal?.at ?? 0) - injectedAt) / 1000).toFixed(1)} s after injection)`,
    );
    return 3;
  },
};
