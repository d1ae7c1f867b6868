// A kubeadm cluster upgraded for real (issue 17): 3 kubeadm Machines at the previous Kubernetes minor
// (KUBERNETES_PREVIOUS_VERSION, real kubeadm 1.36, as in the kubeadm scenario), then `spec.version` raised to
// KUBERNETES_VERSION, so every Machine is replaced by one whose cloud-init runs kubeadm 1.37's `join --control-plane`.
// kubeadm join renders the new node's static pods from the workload cluster's kube-system/kubeadm-config, so the
// upgrade is real only if the control plane moved that ClusterConfiguration to the new version first (as KCP does).
// Afterwards, from the Machines' own files and processes: every static-pod manifest names kubeadm's images for the new
// version (etcd: the one kubeadm 1.37 pins), every component runs the new binary; kubeadm-config and kube-proxy's
// DaemonSet say the new version. Then 3 → 5 → 3 at the new version, checked again.
import { pinnedVersions } from "../../test/env/tools.ts";
import type { Verdict } from "../lib/kubeadm-checks.ts";
import {
  checkBootstrap,
  checkLearners,
  expectedControlPlane,
  observeVersion,
  recordBootstrap,
  type Bootstrap,
} from "../lib/kubeadm-nodes.ts";
import { ScenarioFailure } from "../lib/scenario.ts";
import type { ScenarioDefinition } from "./types.ts";

const { previousKubernetes: FROM, kubernetes: TO } = pinnedVersions();

export const kubeadmUpgrade: ScenarioDefinition = {
  name: "kubeadm-upgrade",
  title: `kubeadm Machines: create 3 at ${FROM} (real kubeadm), upgrade to ${TO} (real kubeadm), then 3 → 5 → 3`,
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
    await s.operation(`upgrade ${FROM}→${TO}`, () => s.patch({ version: TO }), { replicas: 3, timeoutMs: 900_000 });
    await recordBootstrap(s, bootstrap);
    const machines = await s.machines();
    s.check(
      machines.every((machine) => !replaced.has(machine.metadata.name) && machine.spec.version === TO),
      `the upgrade replaced every Machine, all now at ${TO} (before: ${[...replaced].join(", ")}; after: ${machines.map((machine) => `${machine.metadata.name} ${machine.spec.version}`).join(", ")})`,
    );

    const expected = expectedControlPlane(TO);
    // A wrong version after the upgrade fails the scenario at its end, not here: the scale that follows still shows
    // whether joins work in that state, and its own check says whether the joiners got it right.
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
      for (const [from, to] of [
        [3, 5],
        [5, 3],
      ] as const) {
        await s.operation(`scale ${from}→${to} at ${TO}`, () => s.patch({ replicas: to }), { replicas: to });
        await recordBootstrap(s, bootstrap);
      }
      judge(`after 3 → 5 → 3 at ${TO}`, await observeVersion(s, expected));
      checkBootstrap(s, bootstrap);
      // 3 joins in the upgrade, 2 in the scale-up, besides those of the creation the monitor may have missed.
      checkLearners(s, 5);
    } catch (error) {
      throw withEarlier(error, failures);
    }
    s.check(failures.length === 0, failures.join("\n"));
    return 3;
  },
};

/** A later failure that keeps the version failures seen before it in its message. */
function withEarlier(error: unknown, earlier: string[]): unknown {
  if (earlier.length === 0 || !(error instanceof Error)) return error;
  return new ScenarioFailure(`${error.message}\nEarlier: ${earlier.join("\n")}`);
}
