// A user deletes a control-plane Machine with kubectl (the Machine whose member leads etcd, the hardest case): CAPI
// starts deleting it but waits on Quorum's pre-terminate hook; Quorum moves leadership away, removes the member and
// releases the hook; only then does CAPI delete the ProcessMachine, whose processes the provider stops. A
// replacement brings the control plane back to 3.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { kubectlBinary } from "../../test/unit/config/kustomize.ts";
import type { ScenarioDefinition } from "./types.ts";
import { VERSION } from "./types.ts";

const run = promisify(execFile);

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
        const { stdout } = await run(kubectlBinary(), [
          "--kubeconfig",
          s.stack.apiServer.kubeconfigPath,
          "-n",
          s.namespace,
          "delete",
          "machine",
          victim,
          "--wait=false",
        ]);
        deletedAt = Date.now();
        s.log(`kubectl: ${stdout.trim()}`);
      },
      { replicas: 3 },
    );
    const events = s.stack.providerEvents().filter((event) => event.machine === victim);
    const stopping = events.find((event) => event.kind === "stopping");
    // When etcd answered Quorum's removal call (its own log line). The quorum monitor samples the membership every
    // 250 ms, so its "member-removed" can come after a provider that acts within ~100 ms of the hook's release.
    const removal = s
      .controllerActions()
      .find((action) => action.kind === "RemoveMember" && action.message.includes(`member ${victim} (`));
    const observed = s.memberEvents().find((event) => event.kind === "member-removed" && event.subject === victim);
    const machines = (await s.machines()).map((machine) => machine.metadata.name);
    s.check(
      !machines.includes(victim),
      `Machine ${victim} is gone and a replacement took its place (${machines.join(", ")})`,
    );
    s.check(
      stopping !== undefined && stopping.memberPresent === false,
      `when the provider stopped ${victim}'s processes its etcd member was no longer in the membership`,
    );
    const after = (at: number | undefined) =>
      at === undefined ? "never" : `${((at - deletedAt) / 1000).toFixed(1)} s after kubectl delete`;
    s.check(
      removal !== undefined && stopping !== undefined && removal.at <= stopping.at,
      `etcd removed the member (${after(removal?.at)}; the monitor saw it gone ${after(observed?.at)}) before the processes stopped (${after(stopping?.at)})`,
    );
    return 3;
  },
};
