// A control-plane host of a kubeadm cluster reboots, as kured does after a kernel update or a cloud does for
// maintenance: its kubelet stops with every static pod (etcd, kube-apiserver, controller-manager, scheduler), the Node
// goes NotReady once the node lifecycle controller's grace period passes, and the host boots again with its disk.
// Quorum must take no step meanwhile, name the down member in status with since when, and not offer to delete the
// Machine as lost (spec.remediation.machineLostAfter, 5m by default, is longer than a reboot); after the boot the same
// member (its ID unchanged: etcd restarted from its data directory) serves again and no Machine was replaced. kured
// reboots every host in turn, so the `kubeadm` scenario reboots a follower's host and `kubeadm-upgrade` the leader's:
// there the other two elect a leader while it is off, and status must follow the election.
import { setTimeout as sleep } from "node:timers/promises";
import { isDisruptive, type Action } from "../../src/core/actions.ts";
import { isProcessAlive } from "../../test/env/processes.ts";
import { eventually } from "../../test/env/wait.ts";
import { CONTROL_PLANE_COMPONENTS } from "./kubeadm-checks.ts";
import { kubeadmNodes, observeNode, workloadGet } from "./kubeadm-nodes.ts";
import { ScenarioFailure, statusText, type Scenario } from "./scenario.ts";

/** How long the Node may take to go NotReady after the power-off (the grace period plus a controller failover). */
const NOT_READY_WITHIN_MS = 240_000;
/** How long the Node may take to report Ready again once the control plane converged. */
const READY_AGAIN_WITHIN_MS = 90_000;

/** The Node's Ready condition status ("True", "False", "Unknown"), or what kept it from being read. */
async function nodeReady(s: Scenario, node: string): Promise<string> {
  const { status, body } = await workloadGet(s, `/api/v1/nodes/${node}`);
  if (status !== 200) return `HTTP ${status}`;
  const conditions = (JSON.parse(body) as { status?: { conditions?: { type: string; status: string }[] } }).status
    ?.conditions;
  return conditions?.find((condition) => condition.type === "Ready")?.status ?? "no Ready condition";
}

/**
 * Reboots the host of the etcd leader or of a follower (powered off until its Node is NotReady, then on) and checks
 * the above.
 */
export async function checkReboot(s: Scenario, role: "leader" | "follower"): Promise<void> {
  const members = (await s.controlPlane()).status?.etcd?.members ?? [];
  const victim = members.find((member) => member.leader === (role === "leader") && member.healthy && member.machine);
  if (!victim?.machine)
    throw new ScenarioFailure(`no healthy ${role} with a Machine in status (${JSON.stringify(members)})`);
  const machine = victim.machine;
  const nodeName = victim.node ?? victim.name;
  const node = (await kubeadmNodes(s)).find((candidate) => candidate.machine === machine);
  if (!node) throw new ScenarioFailure(`the provider runs no kubeadm Machine ${machine}`);
  const before = observeNode(node).processes;
  const machinesBefore = (await s.machines()).map((candidate) => candidate.metadata.name).sort();

  let offAt = 0;
  let notReadyAt = 0;
  let named = "";
  let offeredAsLost = "";
  let downSince: string | undefined;
  /** Another member status named the leader while the host was off. */
  let otherLeader: string | undefined;
  let stillRunning: number[] | undefined;
  await s.operation(
    `reboot ${machine} (host ${victim.name}): power off until its Node is NotReady, then on`,
    async () => {
      // Taken before the request: the provider may act on it before the answer arrives.
      offAt = Date.now();
      await s.stack.setPowerState(s.namespace, machine, "Off");
      s.userEvents.push({ at: offAt, kind: "host-powered-off", subject: machine });
    },
    {
      replicas: 3,
      rollout: false,
      during: async () => {
        for (;;) {
          const qcp = await s.controlPlane();
          const text = statusText(qcp);
          downSince ??= qcp.status?.etcd?.members?.find((member) => member.id === victim.id)?.downSince;
          otherLeader ??= qcp.status?.etcd?.members?.find((member) => member.leader && member.id !== victim.id)?.name;
          if (!named)
            named =
              text.split("\n").find((line) => line.includes(`member ${victim.name}`) && line.includes(" since ")) ?? "";
          if (!offeredAsLost && text.includes(`if machine ${machine} is lost`)) offeredAsLost = text;
          const poweredOff = s.stack
            .providerEvents()
            .some((event) => event.machine === machine && event.kind === "powered-off" && event.at >= offAt);
          // Read once the kubelet has stopped: every process the host ran before must be gone by then.
          if (poweredOff && stillRunning === undefined)
            stillRunning = before.map((seen) => seen.pid).filter((pid) => isProcessAlive(pid));
          const ready = await nodeReady(s, nodeName).catch((error: Error) => `error: ${error.message}`);
          if (!notReadyAt && (ready === "Unknown" || ready === "False")) {
            notReadyAt = Date.now();
            s.log(
              `Node ${nodeName} is Ready=${ready} ${((notReadyAt - offAt) / 1000).toFixed(1)} s after the power-off`,
            );
          }
          const elected = role === "follower" || otherLeader !== undefined;
          if (notReadyAt && named && stillRunning !== undefined && elected) break;
          if (Date.now() - offAt > NOT_READY_WITHIN_MS)
            throw new ScenarioFailure(
              `within ${NOT_READY_WITHIN_MS / 1000} s of powering ${machine} off: ` +
                [
                  notReadyAt ? "" : `its Node ${nodeName} did not go NotReady (Ready: ${ready})`,
                  stillRunning ? "" : "the provider did not report it powered off",
                  named
                    ? ""
                    : `status did not name member ${victim.name} as down since a time (${text.replaceAll("\n", " | ")})`,
                  elected ? "" : `status named no other member the etcd leader`,
                ]
                  .filter(Boolean)
                  .join("; "),
            );
          await sleep(1_000);
        }
        await s.stack.setPowerState(s.namespace, machine, "On");
        s.userEvents.push({ at: Date.now(), kind: "host-powered-on", subject: machine });
        s.log(`powered ${machine} on again ${((Date.now() - offAt) / 1000).toFixed(1)} s after the power-off`);
      },
    },
  );

  s.check(
    stillRunning?.length === 0,
    `powering ${machine} off stopped every control-plane process it ran (${before.map((seen) => `${seen.component} ${seen.pid}`).join(", ")}${stillRunning?.length ? `; still running: ${stillRunning.join(", ")}` : ""})`,
  );
  s.check(
    notReadyAt > 0,
    `the Node ${nodeName} went NotReady ${((notReadyAt - offAt) / 1000).toFixed(1)} s into the reboot`,
  );
  s.check(named !== "", `status named the down member while the host was off: ${named.slice(0, 300)}`);
  if (role === "leader")
    s.check(
      otherLeader !== undefined,
      `while the leader's host was off the other members elected ${otherLeader ?? "no one"} and status named it the leader`,
    );
  const downSinceMs = downSince === undefined ? Number.NaN : Date.parse(downSince);
  s.check(
    downSinceMs >= offAt && downSinceMs <= notReadyAt,
    `status.etcd.members[].downSince of ${victim.name} was set during the reboot, no earlier than the power-off (${downSince ?? "never set"}; powered off ${new Date(offAt).toISOString()})`,
  );
  s.check(
    offeredAsLost === "",
    `status did not offer deleting ${machine} as lost during a reboot shorter than machineLostAfter (${offeredAsLost.slice(0, 300) || "not offered"})`,
  );
  const disruptive = s
    .controllerActions()
    .filter((action) => action.decidedAt >= offAt && isDisruptive({ kind: action.kind } as unknown as Action));
  s.check(
    disruptive.length === 0,
    `Quorum took no disruptive step during or after the reboot (${disruptive.map((action) => `${action.kind}: ${action.message}`).join("; ") || "none"})`,
  );
  const machinesAfter = (await s.machines()).map((candidate) => candidate.metadata.name).sort();
  s.check(
    machinesAfter.join(",") === machinesBefore.join(","),
    `no Machine was replaced (before: ${machinesBefore.join(", ")}; after: ${machinesAfter.join(", ")})`,
  );
  const after = (await s.controlPlane()).status?.etcd?.members ?? [];
  const back = after.find((member) => member.name === victim.name);
  s.check(
    back?.id === victim.id && back.healthy && !back.learner && back.downSince === undefined,
    `member ${victim.name} serves again under the same ID ${victim.id}, restarted from its data directory (now: ${JSON.stringify(back ?? "gone")})`,
  );
  // A component may still be in its restart backoff (the controller-manager waits on its API server) right after.
  const restarted = await eventually(
    `the kubelet of ${machine} to run all four static pods again`,
    async () => {
      const running = observeNode(node).processes.filter((seen) => !before.some((old) => old.pid === seen.pid));
      const missing = CONTROL_PLANE_COMPONENTS.filter(
        (component) => !running.some((seen) => seen.component === component),
      );
      return missing.length === 0 ? running : { waiting: `not running: ${missing.join(", ")}` };
    },
    { timeoutMs: READY_AGAIN_WITHIN_MS },
  );
  s.check(
    true,
    `the kubelet started every static pod again after the boot (${restarted.map((seen) => `${seen.component} ${seen.pid}`).join(", ")})`,
  );
  const readyAgain = await eventually(
    `Node ${nodeName} to be Ready again`,
    async () => {
      const ready = await nodeReady(s, nodeName);
      return ready === "True" ? ready : { waiting: `Ready: ${ready}` };
    },
    { timeoutMs: READY_AGAIN_WITHIN_MS },
  );
  s.check(readyAgain === "True", `the Node ${nodeName} is Ready again after the boot`);
}
