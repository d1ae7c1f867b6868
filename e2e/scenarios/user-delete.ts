// A user deletes a control-plane Machine with kubectl (the Machine whose member leads etcd, the hardest case): CAPI
// starts deleting it but waits on Quorum's pre-terminate hook; Quorum moves leadership away, removes the member and
// releases the hook; only then does CAPI delete the ProcessMachine, whose processes the provider stops. A
// replacement brings the control plane back to 3.
import type { ScenarioDefinition } from "./types.ts";
import { VERSION } from "./types.ts";

export const userDelete: ScenarioDefinition = {
  name: "user-delete",
  title:
    "kubectl delete machine (the etcd leader's): its member is removed before its processes stop; a replacement joins",
  async run(s) {
    await s.setup({ replicas: 3, version: VERSION });
    const leader = (await s.controlPlane()).status?.etcd?.members?.find((member) => member.leader);
    const victim = leader?.machine;
    if (!victim) throw new Error("no Machine holds the etcd leader");
    let deletedAt = 0;
    await s.operation(
      `kubectl delete machine ${victim}`,
      async () => {
        await s.kubectlDeleteMachine(victim);
        deletedAt = Date.now();
      },
      { replicas: 3 },
    );
    // When etcd answered Quorum's removal call (its own log line). The quorum monitor samples the membership every
    // 250 ms, so its "member-removed" can come after a provider that acts within ~100 ms of the hook's release.
    const removal = s
      .controllerActions()
      .find((action) => action.kind === "RemoveMember" && action.message.includes(`member ${victim} (`));
    const observed = s.memberEvents().find((event) => event.kind === "member-removed" && event.subject === victim);
    const stopping = await s.checkReplaced(victim);
    const after = (at: number | undefined) =>
      at === undefined ? "never" : `${((at - deletedAt) / 1000).toFixed(1)} s after kubectl delete`;
    s.check(
      removal !== undefined && stopping !== undefined && removal.at <= stopping.at,
      `etcd removed the member (${after(removal?.at)}; the monitor saw it gone ${after(observed?.at)}) before the processes stopped (${after(stopping?.at)})`,
    );
    return 3;
  },
};
