// A kubeadm cluster upgraded for real (issue 17): 3 kubeadm Machines at the previous Kubernetes minor
// (KUBERNETES_PREVIOUS_VERSION, real kubeadm 1.36, as in the kubeadm scenario), then `spec.version` raised to
// KUBERNETES_VERSION, so every Machine is replaced by one whose cloud-init runs kubeadm 1.37's `join --control-plane`.
// kubeadm join renders the new node's static pods from the workload cluster's kube-system/kubeadm-config, so the
// upgrade is real only if the control plane moved that ClusterConfiguration to the new version first (as KCP does).
// Afterwards, from the Machines' own files and processes: every static-pod manifest names kubeadm's images for the new
// version (etcd: the one kubeadm 1.37 pins), every component runs the new binary; kubeadm-config and kube-proxy's
// DaemonSet say the new version. Then the etcd leader's host reboots, as kured reboots hosts after an upgrade
// (e2e/lib/kubeadm-reboot.ts; the kubeadm scenario reboots a follower's), and the versions are read again.
// Two faults users meet are played on the way: the upgrade starts with a template whose kube-apiserver cannot start (the
// rollout must stop after that one Machine, naming it and the component, until the template is fixed), and at the end a
// MachineHealthCheck finds a Machine whose kube-apiserver was killed for good, and Quorum replaces it; then a second
// Machine's, which Quorum replaces at once (only a failing replacement waits out remediation.retryPeriod).
import type { Machine } from "../../src/api/capi.ts";
import { REMEDIATION_FOR_ANNOTATION } from "../../src/api/constants.ts";
import { pinnedVersions } from "../../test/env/tools.ts";
import type { Verdict } from "../lib/kubeadm-checks.ts";
import {
  BROKEN_API_SERVER_ARG,
  createBrokenApiServerTemplate,
  createControlPlaneHealthCheck,
  holdStopped,
  killApiServer,
  useBootstrapTemplate,
  waitMachineGone,
  waitRolloutStopped,
} from "../lib/kubeadm-faults.ts";
import { checkReboot } from "../lib/kubeadm-reboot.ts";
import {
  checkBootstrap,
  checkLearners,
  expectedControlPlane,
  kubeadmNodes,
  observeVersion,
  recordBootstrap,
  type Bootstrap,
} from "../lib/kubeadm-nodes.ts";
import { ScenarioFailure, type Scenario } from "../lib/scenario.ts";
import type { ScenarioDefinition } from "./types.ts";

const { previousKubernetes: FROM, kubernetes: TO } = pinnedVersions();

export const kubeadmUpgrade: ScenarioDefinition = {
  name: "kubeadm-upgrade",
  title: `kubeadm Machines: create 3 at ${FROM} (real kubeadm), upgrade to ${TO} (real kubeadm), the leader's host reboots`,
  async run(s) {
    const bootstrap = new Map<string, Bootstrap>();
    await s.setup({ replicas: 3, version: FROM, kubeadm: true }, { kubeadmBootstrap: true });
    await recordBootstrap(s, bootstrap);
    // The same reading before the upgrade must see FROM everywhere: the checks below tell the versions apart.
    const before = await observeVersion(s, expectedControlPlane(FROM));
    s.check(
      before.failed.length === 0,
      `before the upgrade the control plane runs ${FROM}${before.failed.length > 0 ? `: ${before.failed.join("; ")}` : ""}`,
    );
    for (const line of before.passed) s.check(true, `before the upgrade: ${line}`);

    const replaced = new Set((await s.machines()).map((machine) => machine.metadata.name));
    // The upgrade starts with a template whose kube-apiserver cannot start: the rollout must stop after that one
    // Machine, keep the old Machines and members, and say which Machine and component it waits on. Then the user fixes
    // the template (back to the good one) and the upgrade finishes; the client ratio covers both halves.
    const good = (await s.controlPlane()).spec.machineTemplate.spec.bootstrapConfigTemplateRef.name;
    const broken = await createBrokenApiServerTemplate(s, good);
    await s.operation(
      `upgrade ${FROM}→${TO}, first with template ${broken} (kube-apiserver --${BROKEN_API_SERVER_ARG.name})`,
      () => useBootstrapTemplate(s, broken, { version: TO }),
      {
        replicas: 3,
        timeoutMs: 900_000,
        during: async () => {
          const stopped = await waitRolloutStopped(s, replaced, 600_000);
          s.log(`the rollout stopped on ${stopped.machine}: ${stopped.message}`);
          const observations = await holdStopped(s, replaced, stopped.machine, 30_000);
          s.check(
            observations >= 5,
            `for 30 s (${observations} observations) the rollout stayed stopped after ${stopped.machine}, whose kube-apiserver cannot start; the old Machines and their voters stayed; RollingOut named the Machine and the component`,
          );
          await recordBootstrap(s, bootstrap);
          s.log(`fixing the template: back to ${good}`);
          s.userEvents.push({ at: Date.now(), kind: "user-operation", subject: `template back to ${good}` });
          await useBootstrapTemplate(s, good);
        },
      },
    );
    await recordBootstrap(s, bootstrap);
    const machines = await s.machines();
    s.check(
      machines.every((machine) => !replaced.has(machine.metadata.name) && machine.spec.version === TO),
      `the upgrade replaced every Machine, all now at ${TO} (before: ${[...replaced].join(", ")}; after: ${machines.map((machine) => `${machine.metadata.name} ${machine.spec.version}`).join(", ")})`,
    );

    const expected = expectedControlPlane(TO);
    // A wrong version after the upgrade fails the scenario at its end, not here: the reboot and the remediation that
    // follow still show whether the control plane comes back and joins work in that state.
    const failures: string[] = [];
    const judge = (when: string, verdict: Verdict) => {
      for (const line of verdict.passed) s.check(true, `${when}: ${line}`);
      for (const line of verdict.failed) s.log(`${when}: WRONG: ${line}`);
      if (verdict.failed.length > 0)
        failures.push(`${when}, the control plane does not run ${TO}: ${verdict.failed.join("; ")}`);
    };
    // kube-proxy's image moves once every Machine is up to date: it may follow the convergence by a reconcile.
    judge(`after the upgrade to ${TO}`, await observeVersion(s, expected, { kubeProxySettleMs: 30_000 }));
    try {
      await checkReboot(s, "leader");
      // The kubelet started the static pods again from the manifests the upgrade left: still the new version.
      judge(`after the leader's host rebooted at ${TO}`, await observeVersion(s, expected));
      const first = await remediateKilledApiServer(s);
      await remediateIndependentFailure(s, first);
      await recordBootstrap(s, bootstrap);
      checkBootstrap(s, bootstrap);
      // 3 joins in the upgrade and 2 in the remediations, besides those of the creation the monitor may have missed.
      checkLearners(s, 5);
    } catch (error) {
      throw withEarlier(error, failures);
    }
    s.check(failures.length === 0, failures.join("\n"));
    return 3;
  },
};

/**
 * A MachineHealthCheck remediation of a kubeadm Machine whose kube-apiserver was killed and cannot come back: its
 * kubelet (pointed at its local API server by kubeadm) stops reporting, the Node goes Unknown, the MachineHealthCheck
 * marks the Machine, and Quorum replaces it.
 */
async function remediateKilledApiServer(s: Scenario): Promise<string> {
  const health = await createControlPlaneHealthCheck(s, 30);
  const victim = (await kubeadmNodes(s))[0];
  await s.operation(
    `MachineHealthCheck ${health} remediates ${victim.machine}, whose kube-apiserver was killed`,
    async () => {
      const pids = killApiServer(victim);
      s.check(pids.length > 0, `${victim.machine}'s kube-apiserver was running (killed pid ${pids.join(", ")})`);
    },
    // One API server is down on purpose: the client's answers here are not a rollout's.
    { replicas: 3, rollout: false, timeoutMs: 600_000, during: () => waitMachineGone(s, victim.machine, 480_000) },
  );
  const qcp = await s.controlPlane();
  s.check(
    qcp.status?.lastRemediation?.machine === victim.machine,
    `Quorum recorded the remediation of ${victim.machine} (lastRemediation: ${JSON.stringify(qcp.status?.lastRemediation)})`,
  );
  return victim.machine;
}

/**
 * A second host failing on its own right after the first (failures come together in a rack or a zone): Quorum
 * remediates it at once, as KCP does, since the limits pace only a replacement that fails too. retryPeriod is raised
 * to 30m first: counted from the first remediation, as Quorum did before 2026-12-06, this would time out.
 */
async function remediateIndependentFailure(s: Scenario, first: string): Promise<void> {
  await s.patch({ remediation: { retryPeriod: "30m" } });
  const lineage = (machine: Machine) => machine.metadata.annotations?.[REMEDIATION_FOR_ANNOTATION] ?? "";
  const replacement = (await s.machines()).find((machine) => lineage(machine).includes(`"machine":"${first}"`));
  s.check(
    replacement !== undefined,
    `the replacement of ${first} records the remediation it replaces (${REMEDIATION_FOR_ANNOTATION}: ${replacement ? lineage(replacement) : "on no Machine"})`,
  );
  const victim = (await kubeadmNodes(s)).find((node) => node.machine !== replacement?.metadata.name);
  if (!victim) throw new ScenarioFailure(`no Machine besides ${first}'s replacement to fail`);
  await s.operation(
    `${victim.machine}'s kube-apiserver is killed too, right after: remediated without waiting out retryPeriod 30m`,
    async () => {
      const pids = killApiServer(victim);
      s.check(pids.length > 0, `${victim.machine}'s kube-apiserver was running (killed pid ${pids.join(", ")})`);
    },
    { replicas: 3, rollout: false, timeoutMs: 600_000, during: () => waitMachineGone(s, victim.machine, 480_000) },
  );
  const last = (await s.controlPlane()).status?.lastRemediation;
  s.check(
    last?.machine === victim.machine && last.retryCount === 0,
    `Quorum remediated ${victim.machine} as a first try (lastRemediation: ${JSON.stringify(last)})`,
  );
}

/** A later failure that keeps the version failures seen before it in its message. */
function withEarlier(error: unknown, earlier: string[]): unknown {
  if (earlier.length === 0 || !(error instanceof Error)) return error;
  return new ScenarioFailure(`${error.message}\nEarlier: ${earlier.join("\n")}`);
}
