// A ClusterClass whose control plane is a QuorumControlPlaneTemplate, run by the real CAPI core manager with its
// topology controller on (--feature-gates=ClusterTopology=true): the user writes only the ClusterClass and a Cluster
// with spec.topology; CAPI creates the QuorumControlPlane (under a generated name) and Quorum brings up 3 Machines.
// Changing topology.version rolls every Machine (CAPI copies it into the QuorumControlPlane); changing a label in the
// ClusterClass's control-plane metadata reaches every Machine in place (Quorum's in-place propagation), replacing
// none; the Cluster reports the v1beta2 condition Available, which sums up CAPI's view of the whole topology.
import { setTimeout as sleep } from "node:timers/promises";
import type { Machine } from "../../src/api/capi.ts";
import { kubeRequestOk } from "../../test/env/index.ts";
import { BOOTSTRAP_API_VERSION, RESOURCE } from "../provider/crds.ts";
import type { E2EStack } from "../lib/stack.ts";
import type { Scenario } from "../lib/scenario.ts";
import { ScenarioFailure } from "../lib/scenario.ts";
import {
  createClusterClass,
  createTopologyCluster,
  patchClusterClassControlPlaneLabels,
  patchClusterTopology,
  readCluster,
} from "../lib/topology.ts";
import type { ScenarioDefinition } from "./types.ts";
import { NEXT_VERSION, VERSION } from "./types.ts";

const CLUSTER_CLASS = "process-quorum";
const TIER_LABEL = "e2e.quorum.example/tier";
/** The topology controller marks every object it manages with this label (CAPI's ClusterTopologyOwnedLabel). */
const TOPOLOGY_OWNED_LABEL = "topology.cluster.x-k8s.io/owned";

export const clusterClass: ScenarioDefinition = {
  name: "clusterclass",
  title: "ClusterClass topology: create 3 → topology.version rolls all → ClusterClass label in place → Available",
  async run(s) {
    await s.setup(
      { replicas: 3, version: VERSION },
      {
        capiExtraArgs: ["--feature-gates=ClusterTopology=true"],
        createCluster: async (stack: E2EStack) => {
          await createClusterClass(stack.kubeConfig, { namespace: s.namespace, name: CLUSTER_CLASS });
          await createTopologyCluster(stack.kubeConfig, {
            namespace: s.namespace,
            name: s.cluster,
            clusterClass: CLUSTER_CLASS,
            version: VERSION,
            replicas: 3,
          });
        },
      },
    );
    const created = await s.controlPlane();
    s.check(
      created.metadata.name !== s.cluster && created.metadata.labels?.[TOPOLOGY_OWNED_LABEL] !== undefined,
      `CAPI's topology controller created the QuorumControlPlane ${created.metadata.name} from the ClusterClass (label ${TOPOLOGY_OWNED_LABEL})`,
    );
    await waitClusterAvailable(s, 120_000);
    const owners = await bootstrapTemplateOwners(s);
    s.check(
      owners.includes(`ClusterClass/${CLUSTER_CLASS}`) && !owners.some((owner) => owner.startsWith("Cluster/")),
      `the bootstrap template the class's Clusters share is owned by the ClusterClass, not by one of them (owners: ${owners.join(", ") || "none"})`,
    );

    const beforeUpgrade = new Set((await s.machines()).map((machine) => machine.metadata.name));
    await s.operation(
      `topology.version ${VERSION}→${NEXT_VERSION}`,
      async () => {
        await patchClusterTopology(s.stack.kubeConfig, s.namespace, s.cluster, { version: NEXT_VERSION });
        // Until CAPI copies the version into the control plane, the old Machines still look converged.
        await waitFor(s, 60_000, "the topology controller to set the control plane's spec.version", async () => {
          const version = (await s.controlPlane()).spec.version;
          return version === NEXT_VERSION ? true : `spec.version ${version}`;
        });
      },
      { replicas: 3 },
    );
    const afterUpgrade = (await s.machines()).map((machine) => machine.metadata.name);
    s.check(
      afterUpgrade.every((name) => !beforeUpgrade.has(name)),
      `the topology.version change replaced every Machine (before ${[...beforeUpgrade].join(", ")}; after ${afterUpgrade.join(", ")})`,
    );

    const beforeLabel = identities(await s.machines());
    await s.operation(
      `ClusterClass spec.controlPlane.metadata.labels ${TIER_LABEL}=gold`,
      async () => {
        await patchClusterClassControlPlaneLabels(s.stack.kubeConfig, s.namespace, CLUSTER_CLASS, {
          [TIER_LABEL]: "gold",
        });
      },
      {
        replicas: 3,
        rollout: false,
        during: () =>
          waitFor(s, 90_000, `every Machine and ProcessMachine to carry ${TIER_LABEL}=gold`, async () => {
            const machines = await s.machines();
            const processMachines = (await s.stack.processMachines(s.namespace)).filter(
              (machine) => machine.metadata.labels?.["cluster.x-k8s.io/cluster-name"] === s.cluster,
            );
            const missing = [...machines, ...processMachines]
              .filter((object) => object.metadata.labels?.[TIER_LABEL] !== "gold")
              .map((object) => object.metadata.name);
            return missing.length === 0 && machines.length > 0 ? true : `without it: ${missing.join(", ")}`;
          }),
      },
    );
    const afterLabel = identities(await s.machines());
    s.check(
      afterLabel === beforeLabel,
      `the label reached every Machine and its ProcessMachine in place: the same Machines (names and UIDs) before and after (${afterLabel})`,
    );
    await waitClusterAvailable(s, 60_000);
    return 3;
  },
};

/**
 * Who owns the ClusterClass's bootstrap template ("Kind/name"). CAPI's ClusterClass controller owns only the
 * templates the ClusterClass names itself, not the one inside the QuorumControlPlaneTemplate, which every Cluster of
 * the class shares; Quorum gives it to the ClusterClass (src/controller/template-owners.ts): owned by a Cluster, the
 * garbage collector would delete it with that Cluster.
 */
async function bootstrapTemplateOwners(s: Scenario): Promise<string[]> {
  const name = `${CLUSTER_CLASS}-control-plane`;
  const template = await kubeRequestOk<{ metadata: { ownerReferences?: { kind: string; name: string }[] } }>(
    s.stack.kubeConfig,
    `/apis/${BOOTSTRAP_API_VERSION}/namespaces/${s.namespace}/${RESOURCE.ProcessBootstrapConfigTemplate}/${name}`,
  );
  return (template.metadata.ownerReferences ?? []).map((owner) => `${owner.kind}/${owner.name}`);
}

function identities(machines: Machine[]): string {
  return machines
    .map((machine) => `${machine.metadata.name}/${machine.metadata.uid}`)
    .sort()
    .join(", ");
}

/** Polls `probe` every 250 ms until it returns true; its last other answer is the failure's detail. */
async function waitFor(
  s: Scenario,
  timeoutMs: number,
  what: string,
  probe: () => Promise<true | string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const answer = await probe();
      if (answer === true) return;
      last = answer;
    } catch (error) {
      last = `error: ${(error as Error).message}`;
    }
    await sleep(250);
  }
  throw new ScenarioFailure(`waited ${timeoutMs / 1000} s for ${what}; last seen: ${last}\n${s.quorumTail()}`);
}

/** The Cluster's v1beta2 Available condition is True; otherwise the failure lists every condition CAPI set. */
async function waitClusterAvailable(s: Scenario, timeoutMs: number): Promise<void> {
  const startedAt = Date.now();
  await waitFor(s, timeoutMs, `Cluster ${s.namespace}/${s.cluster} to be Available`, async () => {
    const conditions = (await readCluster(s.stack.kubeConfig, s.namespace, s.cluster)).status?.conditions ?? [];
    if (conditions.some((condition) => condition.type === "Available" && condition.status === "True")) return true;
    return conditions
      .map((condition) => `${condition.type}=${condition.status} (${condition.reason}: ${condition.message ?? ""})`)
      .join("; ");
  });
  // waitFor throws when it is not; the check is recorded for the summary.
  s.checks.push(
    `Cluster ${s.namespace}/${s.cluster} is Available (waited ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`,
  );
}
