// A control-plane Machine is lost for good (its etcd SIGKILLed and never restarted, as when a VM vanishes) in a
// management cluster with no MachineHealthCheck, as many users run. Quorum cannot tell a lost Machine from a long
// outage and replaces nothing on its own (nor does KCP), so its status must name the Machine and the way out; the
// user follows it (`kubectl delete machine`), and Quorum removes the dead member before the Machine goes, then a
// replacement joins.
import { setTimeout as sleep } from "node:timers/promises";
import { isDisruptive, type Action } from "../../src/core/actions.ts";
import { eventually } from "../../test/env/wait.ts";
import { VERSION, type ScenarioDefinition } from "./types.ts";

/** Long past the scenario: the provider never brings the killed etcd back. */
const NEVER = "2h";
/**
 * spec.remediation.machineLostAfter, shorter than the 5m default so that the scenario stays short: status offers the
 * way out only once the member has been down this long (a restart or a reboot comes back sooner).
 */
const LOST_AFTER_S = 20;
/** How long status may take to name the way out before the scenario gives up (a bound, not a target). */
const NAMED_WITHIN_MS = 60_000;
/** How long Quorum is watched afterwards for a step it must not take on its own. */
const WATCH_MS = 10_000;

export const machineLost: ScenarioDefinition = {
  name: "machine-lost",
  title:
    "a Machine's etcd killed for good, no MachineHealthCheck: status names it and the fix; kubectl delete machine replaces it",
  async run(s) {
    await s.setup({ replicas: 3, version: VERSION, machineLostAfter: `${LOST_AFTER_S}s` }, { restartDelay: NEVER });
    const members = (await s.controlPlane()).status?.etcd?.members ?? [];
    // A follower: killing the leader adds an election, which is etcd's time and not what this scenario is about.
    const victim = members.find((member) => !member.leader && member.machine)?.machine;
    if (!victim) throw new Error(`no follower member with a Machine in status (${JSON.stringify(members)})`);
    const processMachine = (await s.stack.processMachines(s.namespace)).find(
      (machine) => machine.metadata.name === victim,
    );
    const pid = processMachine?.status?.processes?.etcd?.pid;
    if (typeof pid !== "number") throw new Error(`ProcessMachine ${victim} reports no etcd pid`);
    process.kill(-pid, "SIGKILL");
    const killedAt = Date.now();
    s.userEvents.push({ at: killedAt, kind: "member-killed", subject: victim });
    s.log(`SIGKILLed the etcd member of ${victim} (pid ${pid}); the provider will not restart it`);

    const fix = `if machine ${victim} is lost, delete it`;
    const named = await eventually(
      `status.nextAction to name ${victim} and the way out ("${fix}")`,
      async () => {
        const message = (await s.controlPlane()).status?.nextAction?.message ?? "";
        return message.includes(fix) ? message : { waiting: message };
      },
      { timeoutMs: NAMED_WITHIN_MS },
    );
    const namedAfterMs = Date.now() - killedAt;
    s.check(
      named.includes(fix),
      `status.nextAction named ${victim} and the way out ("${fix}") ${(namedAfterMs / 1000).toFixed(1)} s after the kill: ${named}`,
    );
    // Quorum cannot have seen the member down before the kill, so an earlier offer would not have waited.
    s.check(
      namedAfterMs >= LOST_AFTER_S * 1000,
      `the way out came no sooner than machineLostAfter (${LOST_AFTER_S} s) after the kill (${(namedAfterMs / 1000).toFixed(1)} s)`,
    );
    await sleep(WATCH_MS);
    const onItsOwn = s
      .controllerActions()
      .filter((action) => action.decidedAt > killedAt && isDisruptive({ kind: action.kind } as unknown as Action));
    s.check(
      onItsOwn.length === 0,
      `Quorum took no disruptive step on its own in the ${((Date.now() - killedAt) / 1000).toFixed(0)} s after the kill (${onItsOwn.map((action) => `${action.kind}: ${action.message}`).join("; ") || "none"})`,
    );

    let deletedAt = 0;
    await s.operation(
      `kubectl delete machine ${victim}, as status.nextAction says`,
      async () => {
        // Taken before kubectl: Quorum may act on the deletion before kubectl has printed its answer.
        deletedAt = Date.now();
        await s.kubectlDeleteMachine(victim);
      },
      { replicas: 3 },
    );
    const removal = s
      .controllerActions()
      .find(
        (action) => action.kind === "RemoveMember" && action.decidedAt > deletedAt && action.message.includes(victim),
      );
    const stopping = await s.checkReplaced(victim);
    s.check(
      removal !== undefined && stopping !== undefined && removal.at <= stopping.at,
      `Quorum removed ${victim}'s dead member (${removal ? `${((removal.at - deletedAt) / 1000).toFixed(1)} s after kubectl delete` : "never"}) before the provider stopped the Machine (${stopping ? `${((stopping.at - deletedAt) / 1000).toFixed(1)} s` : "never"})`,
    );
    return 3;
  },
};
