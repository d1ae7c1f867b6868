// spec.etcd.access seen from the user's side on kubeadm Machines whose firewalls close etcd's client port to the
// management side (e2e/provider/kubeadm/firewall.ts), as clouds do: the flavour's default (APIServerProxy) is in
// status and works; switched to Direct, Quorum says it cannot reach the members, names them and the fix, and does
// nothing to the Machines; switched back, it reads etcd again.
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { eventually } from "../../test/env/index.ts";
import { ETCD_CLIENT_PORT } from "../provider/machine-base.ts";
import type { Scenario } from "./scenario.ts";

const HEALTHY = "EtcdClusterHealthy";

function condition(controlPlane: QuorumControlPlane, type: string) {
  return controlPlane.status?.conditions?.find((candidate) => candidate.type === type);
}

export async function checkDirectAccessBlocked(s: Scenario): Promise<void> {
  const before = await s.controlPlane();
  s.check(
    before.status?.etcd?.access === "APIServerProxy" && before.spec.etcd?.access === undefined,
    `with spec.etcd.access unset, status.etcd.access shows kubeadm's default APIServerProxy (got ${before.status?.etcd?.access})`,
  );
  const machinesBefore = (await s.machines()).map((machine) => machine.metadata.name).sort();
  const addresses = (await s.machines()).flatMap((machine) =>
    (machine.status?.addresses ?? []).filter((address) => address.type === "InternalIP").map((a) => a.address),
  );
  await s.patch({ etcd: { access: "Direct" } });
  const started = Date.now();
  const message = await eventually(
    "Quorum to report etcd unreachable with spec.etcd.access Direct",
    async () => {
      const controlPlane = await s.controlPlane();
      const text = condition(controlPlane, HEALTHY)?.message ?? "";
      return controlPlane.status?.etcd?.access === "Direct" &&
        text.includes("not reachable") &&
        text.includes("spec.etcd.access: APIServerProxy")
        ? text
        : { waiting: `status.etcd.access ${controlPlane.status?.etcd?.access}; ${HEALTHY}: ${text}` };
    },
    { timeoutMs: 120_000, intervalMs: 1_000 },
  );
  s.log(`Direct through the firewall, after ${Math.round((Date.now() - started) / 1000)} s: ${message}`);
  s.check(
    addresses.some((address) => message.includes(`https://${address}:${ETCD_CLIENT_PORT}`)),
    `with Direct, ${HEALTHY} says etcd is not reachable, names an unreachable member's client URL (one of ${addresses.join(", ")}) and the fix (spec.etcd.access: APIServerProxy)`,
  );
  const machinesDuring = (await s.machines()).map((machine) => machine.metadata.name).sort();
  s.check(
    machinesDuring.join(",") === machinesBefore.join(","),
    `while etcd cannot be read, Quorum creates and deletes no Machine (${machinesDuring.join(", ")})`,
  );
  await s.patch({ etcd: { access: null } });
  await eventually(
    "Quorum to read etcd again through the API server",
    async () => {
      const controlPlane = await s.controlPlane();
      const healthy = condition(controlPlane, HEALTHY);
      return controlPlane.status?.etcd?.access === "APIServerProxy" && healthy?.status === "True"
        ? true
        : { waiting: `status.etcd.access ${controlPlane.status?.etcd?.access}; ${HEALTHY}: ${healthy?.message}` };
    },
    { timeoutMs: 120_000, intervalMs: 1_000 },
  );
  s.check(true, "access back to the default: etcd read through the API server again, every voter healthy");
}
