// The world behind the real controller's ports must answer as the real systems do, or the simulator proves
// nothing: etcd's refusals, CAPI's Machines as v1beta2 objects, and a crash that stops every later call.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CERTIFICATES_EXPIRY_ANNOTATION, PRE_TERMINATE_HOOK } from "../../../src/api/constants.ts";
import { CallGate, SimCrash } from "../../sim/calls.ts";
import { SimPorts } from "../../sim/ports.ts";
import { retryLaterOf } from "../../../src/ports/index.ts";
import { createScenario } from "../../sim/scenario.ts";
import { STEP_MS, voters, type World } from "../../sim/world.ts";

/** The first seed's world that starts converged with 3 replicas, without lagging Machines, and its ports. */
function converged(kubeadm = false): { world: World; ports: SimPorts } {
  for (let seed = 1; ; seed++) {
    const { world } = createScenario(seed);
    if (world.machines.length !== 3 || world.traits.kubeadm !== kubeadm) continue;
    world.traits = { ...world.traits, nodeRefLag: false, addressLag: false, secondOwner: false, racingOutage: false };
    for (const machine of world.machines) {
      delete machine.nodeRefAt;
      delete machine.addressAt;
    }
    const ports = new SimPorts(world, { bootFault: () => undefined });
    ports.gate = new CallGate(world);
    return { world, ports };
  }
}

/** The control plane and its bootstrap template reader, as reconcile() hands them to the workload port. */
function kubeadmInputs(ports: SimPorts) {
  const controlPlane = ports.controlPlane();
  const ref = controlPlane.spec.machineTemplate.spec.bootstrapConfigTemplateRef;
  return { controlPlane, template: () => ports.management.getReferenced(ref, "default", "") };
}

async function client(world: World, ports: SimPorts) {
  const endpoints = world.machines.map((machine) => `https://${machine.address}:2379`);
  return ports.workload.etcd(ports.controlPlane(), { metadata: { name: "sim" } }, endpoints);
}

describe("the simulated world's ports", () => {
  it("shows each Machine as a CAPI v1beta2 object with its address, nodeRef and Quorum's hook", async () => {
    const { world, ports } = converged();
    const machines = await ports.management.listControlPlaneMachines("default", "qcp");
    assert.equal(machines.length, 3);
    for (const machine of machines) {
      const truth = world.machines.find((candidate) => candidate.name === machine.metadata.name)!;
      assert.deepEqual(machine.status?.addresses, [{ type: "InternalIP", address: truth.address }]);
      assert.equal(machine.status?.nodeRef?.name, truth.hostName);
      assert.equal(machine.metadata.annotations?.[PRE_TERMINATE_HOOK] !== undefined, truth.hook);
    }
  });

  it("refuses a voter removal with the typed removal-window 'not yet' ('unhealthy cluster') while the leader's connections are younger than 5 s, and accepts it later", async () => {
    const { world, ports } = converged();
    const etcd = await client(world, ports);
    const leader = world.members.find((member) => member.id === world.leaderId)!;
    const leaving = voters(world).find((member) => member.id !== leader.id)!;
    leader.activeSince = world.now - 1_000;
    await assert.rejects(
      etcd.removeMember(leaving.id),
      (error: unknown) =>
        retryLaterOf(error)?.refusal === "removal-window" &&
        retryLaterOf(error)?.etcdMessage === "etcdserver: unhealthy cluster",
    );
    world.now += STEP_MS;
    assert.deepEqual(await etcd.removeMember(leaving.id), { removed: true });
    assert.deepEqual(await etcd.removeMember(leaving.id), { removed: false });
  });

  it("does not promote a learner that is behind the leader, and says so as etcd does", async () => {
    const { world, ports } = converged();
    const etcd = await client(world, ports);
    const member = voters(world).find((candidate) => candidate.id !== world.leaderId)!;
    member.learner = true;
    member.appliedIndex = 0;
    assert.deepEqual(await etcd.promoteLearner(member.id), { promoted: false, reason: "not caught up" });
    assert.match(ports.gate.log.at(-1) ?? "", /in sync with leader/);
  });

  it("fails every call after the crash point, so nothing after it takes effect", async () => {
    const { world, ports } = converged();
    ports.gate = new CallGate(world, { phase: "observe", after: 2 });
    await ports.management.getControlPlane("default", "qcp");
    await ports.management.getCluster("default", "sim");
    await assert.rejects(ports.management.deleteMachine("default", world.machines[0].name), SimCrash);
    await assert.rejects(ports.management.getControlPlane("default", "qcp"), SimCrash);
    assert.equal(world.machines[0].deleting, undefined);
  });

  it("runs the real kubeadm flavour over the kubeadm world's objects: a version bump shows kubeadm-config and the 1.37 binding to do", async () => {
    const { world, ports } = converged(true);
    world.spec.version = "v1.37.0";
    const { controlPlane, template } = kubeadmInputs(ports);
    const observed = await ports.workload.workloadSteps(controlPlane, { metadata: { name: "sim" } }, template);
    assert.equal(observed.flavour, "kubeadm");
    assert.deepEqual(
      observed.steps.map((step) => [step.name, step.done]),
      [
        ["kubeadm-config", false],
        ["kubeadm-permissions", false],
        ["kube-proxy", false],
        // The sim's template pins no CoreDNS: done without a read.
        ["coredns", true],
      ],
    );
    assert.match(
      ports.gate.log.join(", "),
      /read ClusterRoleBinding kubeadm:apiserver-kubelet-client: clusterrolebindings.rbac.authorization.k8s.io "kubeadm:apiserver-kubelet-client" not found/,
    );
    await ports.workload.prepareWorkload(controlPlane, { metadata: { name: "sim" } }, "kubeadm-config", template);
    assert.match(world.kubeadm?.clusterConfiguration ?? "", /kubernetesVersion: v1.37.0/);
  });

  it("stops the kubeadm flavour at the crash point between two of its calls, and its write never lands", async () => {
    const { world, ports } = converged(true);
    world.spec.version = "v1.36.4";
    const { controlPlane, template } = kubeadmInputs(ports);
    const before = world.kubeadm?.clusterConfiguration;
    // prepare reads the ConfigMap, then the template, then would replace the ConfigMap: the crash falls before that.
    ports.gate = new CallGate(world, { phase: "observe", after: 2 });
    await assert.rejects(
      ports.workload.prepareWorkload(controlPlane, { metadata: { name: "sim" } }, "kubeadm-config", template),
      SimCrash,
    );
    assert.equal(world.kubeadm?.clusterConfiguration, before);
  });

  it("answers the kubeadm flavour as an unreadable workload API while etcd has no leader, as nodes() does", async () => {
    const { world, ports } = converged(true);
    world.spec.version = "v1.36.4";
    world.leaderId = undefined;
    const { controlPlane, template } = kubeadmInputs(ports);
    const observed = await ports.workload.workloadSteps(controlPlane, { metadata: { name: "sim" } }, template);
    assert.deepEqual(observed.steps, []);
    assert.match(
      observed.error ?? "",
      /could not be reached \(the workload cluster's API server did not answer: etcdserver: no leader\)/,
    );
  });
  it("shows a kubeadm Machine's certificates expiry to the dial while its API server runs, and keeps what Quorum records", async () => {
    const { world, ports } = converged(true);
    world.spec.certificatesExpiryDays = 30;
    const [running, down] = world.machines;
    running.certificatesExpiry = Date.UTC(2026, 1, 1);
    down.certificatesExpiry = Date.UTC(2026, 1, 2);
    world.members.find((member) => member.id === down.memberId)!.up = false;
    const { controlPlane, template } = kubeadmInputs(ports);
    assert.equal(controlPlane.spec.rollout?.before?.certificatesExpiryDays, 30);
    const serving = [running, down].map((machine) => ({ name: machine.name, uid: "", address: machine.address! }));
    const read = await ports.workload.certificatesExpiry!(
      controlPlane,
      { metadata: { name: "sim" } },
      serving,
      template,
    );
    assert.deepEqual(read.expiries, { [running.name]: Date.UTC(2026, 1, 1) });
    assert.match(read.errors.join("\n"), new RegExp(`Machine ${down.name}: .*ECONNREFUSED`));

    const [shown] = await ports.management.listControlPlaneMachines("default", "qcp");
    await ports.management.patchAnnotations(
      "cluster.x-k8s.io/v1beta2",
      "Machine",
      "default",
      running.name,
      { [CERTIFICATES_EXPIRY_ANNOTATION]: "2026-02-01T00:00:00Z" },
      shown.metadata.resourceVersion,
    );
    const [again] = await ports.management.listControlPlaneMachines("default", "qcp");
    assert.equal(again.metadata.annotations?.[CERTIFICATES_EXPIRY_ANNOTATION], "2026-02-01T00:00:00Z");
  });
});
