// kubeadm, as nearly every CAPI user bootstraps: the QuorumControlPlane's bootstrap template is the KubeadmConfigTemplate
// of config/samples/cluster-kubeadm.yaml, CAPI's kubeadm bootstrap provider (CABPK) writes the cloud-init, and each
// Machine runs real `kubeadm init` / `kubeadm join --control-plane` for Kubernetes 1.36 in namespaces of its own
// (e2e/provider/kubeadm/): kubeadm writes the certificates and static-pod manifests, a process kubelet runs them, kubeadm
// adds each joining etcd member as a learner and promotes it. The member and the Node are named after the host
// (`ip-10-200-1-3`), never after the Machine, as on clouds. Each Machine's firewall closes etcd's client port to the
// management side (as a cloud's security group does), so Quorum reads etcd through the workload API server's
// pods/portforward (spec.etcd.access APIServerProxy, kubeadm's default). Create 1 → scale 3 → 5 → 3 (before the last,
// the newest Machine's Node loses kubeadm's control-plane label: that half-joined Machine must go); then Direct is
// tried (Quorum must name the unreachable members and the fix, and touch nothing) and undone. Then one Node loses
// kubeadm's control-plane label, as a join that stopped before mark-control-plane leaves it (e2e/lib/kubeadm-node-label.ts):
// Quorum must say so on its Machine and in nextAction, and replace nothing. Last, a follower's host reboots
// (e2e/lib/kubeadm-reboot.ts): Quorum waits it out, names the down member, and replaces nothing.
import { pinnedVersions } from "../../test/env/tools.ts";
import {
  checkBootstrap,
  checkLearners,
  expectedControlPlane,
  observeVersion,
  recordBootstrap,
  type Bootstrap,
} from "../lib/kubeadm-nodes.ts";
import { checkEtcdPortForward } from "../lib/kubeadm-portforward.ts";
import { checkDirectAccessBlocked } from "../lib/etcd-access.ts";
import { checkNodeLabel, unlabelNewest } from "../lib/kubeadm-node-label.ts";
import { checkReboot } from "../lib/kubeadm-reboot.ts";
import type { ScenarioDefinition } from "./types.ts";

const VERSION = pinnedVersions().previousKubernetes;

export const kubeadm: ScenarioDefinition = {
  name: "kubeadm",
  title: `kubeadm Machines (CABPK cloud-init, real kubeadm ${VERSION}, process kubelet): create 1 → 3 → 5 → 3, a host reboots`,
  async run(s) {
    const bootstrap = new Map<string, Bootstrap>();
    await s.setup({ replicas: 1, version: VERSION, kubeadm: true }, { kubeadmBootstrap: true });
    await recordBootstrap(s, bootstrap);
    for (const [from, to] of [
      [1, 3],
      [3, 5],
      [5, 3],
    ] as const) {
      // Scaling down, one Node lacks kubeadm's control-plane label: its Machine must be the one removed.
      const checkRemoved = to < from ? await unlabelNewest(s) : undefined;
      await s.operation(`scale ${from}→${to}`, () => s.patch({ replicas: to }), { replicas: to });
      await checkRemoved?.();
      await recordBootstrap(s, bootstrap);
    }

    checkBootstrap(s, bootstrap);
    const members = (await s.controlPlane()).status?.etcd?.members ?? [];
    const machineNames = new Set((await s.machines()).map((machine) => machine.metadata.name));
    s.check(
      members.length === 3 &&
        members.every((member) => /^ip-10-200-/.test(member.name) && !machineNames.has(member.name)),
      `every etcd member is named after its host, not its Machine, and Quorum maps each to its Machine (${members.map((member) => `${member.name}→${member.machine}`).join(", ")})`,
    );
    checkLearners(s, 4);
    // Every static pod runs the binary of kubeadm's image for VERSION (etcd: the 3.6 it pins) with its manifest's
    // arguments, in its Machine's network namespace; kubeadm-config and kube-proxy say VERSION.
    const verdict = await observeVersion(s, expectedControlPlane(VERSION));
    s.check(
      verdict.failed.length === 0,
      `the control plane runs ${VERSION}${verdict.failed.length > 0 ? `: ${verdict.failed.join("; ")}` : ""}`,
    );
    for (const line of verdict.passed) s.check(true, line);
    // Issue 18: every Machine's etcd is reachable through the workload API server's pods/portforward.
    await checkEtcdPortForward(s);
    await checkDirectAccessBlocked(s);
    await checkNodeLabel(s);
    await checkReboot(s, "follower");
    return 3;
  },
};
