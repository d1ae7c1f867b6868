// In the middle of a rolling upgrade, the etcd member of a Machine that is not being replaced (the first new one, made
// a follower first) is SIGKILLed; the provider brings it back after 25 s, like kubelet restarting a static pod. Until it is back,
// Quorum must take no disruptive step (the only one allowed is finishing a Machine whose member was already gone
// before the kill), and its status must name the member.
import { setTimeout as sleep } from "node:timers/promises";
import { isDisruptive, type Action } from "../../src/core/actions.ts";
import { statusText } from "../lib/scenario.ts";
import { NEXT_VERSION, VERSION, type ScenarioDefinition } from "./types.ts";

const RESTART_DELAY_S = 25;

export const memberDown: ScenarioDefinition = {
  name: "member-down",
  title: "kill a member that is not being replaced mid-rollout: no disruptive step until it is back; status names it",
  async run(s) {
    await s.setup({ replicas: 3, version: VERSION }, { restartDelay: `${RESTART_DELAY_S}s` });
    const oldMachines = new Set((await s.machines()).map((machine) => machine.metadata.name));
    let killedAt = 0;
    let backAt = 0;
    let victim = "";
    let named = "";
    let offeredAsLost = "";
    let alreadyGone = new Set<string>();
    // Quorum forwards leadership to the newest member, the one killed here. Killing the etcd leader costs an election
    // (seconds without writes) whoever the control-plane provider is; this scenario is about a follower going away.
    const keepLeadershipOff = async (machine: string) => {
      await s.workload.refresh();
      const client = s.workload.etcdClient();
      try {
        const statuses = await client.memberStatuses();
        const members = await client.listMembers();
        const target = members.find((member) => member.name === machine);
        const leader = statuses.find((status) => status.leader);
        if (!target || leader?.memberId !== target.id) return;
        const other = members.find(
          (member) =>
            member.id !== target.id &&
            !member.learner &&
            statuses.find((status) => status.memberId === member.id)?.reachable,
        );
        if (!other) return;
        await client.moveLeader(other.id);
        s.log(`moved etcd leadership from ${machine} to ${other.name} so that the member killed next is a follower`);
      } finally {
        await client.close();
      }
    };
    await s.operation(
      `upgrade ${VERSION}→${NEXT_VERSION} with a member down`,
      () => s.patch({ version: NEXT_VERSION }),
      {
        replicas: 3,
        during: async () => {
          // Wait for the first replacement to finish: a new Machine runs and one old Machine is gone.
          for (;;) {
            const machines = await s.machines();
            const names = new Set(machines.map((machine) => machine.metadata.name));
            const newRunning = (await s.stack.processMachines(s.namespace)).find(
              (machine) =>
                !oldMachines.has(machine.metadata.name) &&
                machine.status?.phase === "Running" &&
                machine.status.processes?.etcd?.pid,
            );
            if (newRunning && [...oldMachines].some((name) => !names.has(name))) {
              victim = newRunning.metadata.name;
              const pid = newRunning.status?.processes?.etcd?.pid as number;
              await keepLeadershipOff(victim);
              alreadyGone = new Set(
                s
                  .memberEvents()
                  .filter((event) => event.kind === "member-removed")
                  .map((event) => event.subject),
              );
              process.kill(-pid, "SIGKILL");
              killedAt = Date.now();
              s.userEvents.push({ at: killedAt, kind: "member-killed", subject: victim });
              s.log(
                `SIGKILLed the etcd member of ${victim} (pid ${pid}), which the rollout keeps; the provider restarts it in ${RESTART_DELAY_S} s`,
              );
              break;
            }
            await sleep(200);
          }
          // Until the member is back: watch status for its name.
          for (;;) {
            const qcp = await s.controlPlane();
            const text = statusText(qcp);
            if (!named && text.includes(victim)) named = text.split("\n").find((line) => line.includes(victim)) ?? "";
            if (!offeredAsLost && text.includes(`if machine ${victim} is lost`)) offeredAsLost = text;
            // Back = the restarted etcd answered /health (the provider's event). The provider probes every 200 ms,
            // and Quorum's own health round may see the member back before the provider's next probe does: the
            // member was certainly down only until the provider's last probe that failed, so that ends the window.
            const restarted = s.stack
              .providerEvents()
              .find((event) => event.machine === victim && event.kind === "etcd-restarted" && event.at > killedAt);
            if (restarted) {
              const readyAt = typeof restarted.readyAt === "number" ? restarted.readyAt : restarted.at;
              backAt = typeof restarted.notReadyAt === "number" ? restarted.notReadyAt : readyAt;
              s.log(
                `${victim}'s member is healthy again after ${((readyAt - killedAt) / 1000).toFixed(1)} s ` +
                  `(last seen down ${((backAt - killedAt) / 1000).toFixed(1)} s after the kill)`,
              );
              break;
            }
            await sleep(250);
          }
        },
      },
    );
    const actions = s.controllerActions();
    // Members removed before the kill: those Quorum removed (from its log: the list of member events is sampled and
    // can lag the kill by a few hundred ms) and those the sampler saw go.
    const removedBefore = actions.filter(
      (action) => action.kind === "RemoveMember" && (action.confirmedAt ?? action.decidedAt) < killedAt,
    );
    // (The process provider names each member after its Machine.)
    const goneBeforeKill = (machine: string) =>
      alreadyGone.has(machine) || removedBefore.some((action) => action.message.includes(`member ${machine} (`));
    // A removal is judged by the last health confirmation it rested on (taken right before it was sent).
    const during = actions.filter(
      (action) => (action.confirmedAt ?? action.decidedAt) > killedAt && action.decidedAt < backAt,
    );
    const disruptive = during.filter((action) => isDisruptive({ kind: action.kind } as unknown as Action));
    // Finishing the deletion of a Machine whose member was removed before the kill changes no membership.
    const offending = disruptive.filter(
      (action) =>
        !(action.kind === "DeleteMachine" && goneBeforeKill(/deleted Machine (\S+)/.exec(action.message)?.[1] ?? "")),
    );
    s.notes.push(
      `member of ${victim} down for ${((backAt - killedAt) / 1000).toFixed(1)} s; actions meanwhile: ${during.map((action) => action.kind).join(", ") || "none"}`,
    );
    s.check(
      offending.length === 0,
      `no disruptive step while the member of ${victim} was down (${offending.map((action) => `${action.kind}: ${action.message}`).join("; ") || "none taken"})`,
    );
    s.check(named !== "", `status named the down member ${victim} while it was down (${named.slice(0, 200)})`);
    // An etcd restart is over in seconds: offering "if it is lost, delete it" would invite replacing a healthy Machine.
    s.check(
      offeredAsLost === "",
      `status did not offer deleting ${victim} as lost while its etcd restarted (${offeredAsLost.slice(0, 300) || "not offered"})`,
    );
    return 3;
  },
};
