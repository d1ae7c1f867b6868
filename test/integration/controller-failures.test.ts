// User mistakes become conditions that name the cause and the fix, and one broken QuorumControlPlane does not stop
// the controller from reconciling the others (nor, when it is a copy-pasted second one, touch the first one's Cluster).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  API_VERSION,
  CLUSTER_SECRET_TYPE,
  KIND,
  LABEL_CLUSTER_NAME,
  LABEL_CONTROL_PLANE_NAME,
} from "../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { kubeRequestOk } from "../env/kube.ts";
import { startStack, type ControllerStack } from "./controller/stack.ts";
import { INFRA_GROUP, TEST_VERSION } from "./controller/test-kinds.ts";

const NS = "failures";

async function conditionEventually(
  stack: ControllerStack,
  name: string,
  type: string,
  timeoutMs = 60_000,
): Promise<NonNullable<QuorumControlPlane["status"]>["conditions"]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const qcp = await stack.getControlPlane(NS, name);
    const condition = qcp.status?.conditions?.find(
      (candidate) => candidate.type === type && candidate.status === "False",
    );
    if (condition) return qcp.status?.conditions;
    if (Date.now() > deadline)
      throw new Error(
        `QuorumControlPlane ${NS}/${name} never got ${type}=False; status: ${JSON.stringify(qcp.status)}`,
      );
    await sleep(300);
  }
}

describe("broken QuorumControlPlanes", { timeout: 600_000 }, () => {
  let stack: ControllerStack;

  before(async () => {
    stack = await startStack({ capi: true });
    await stack.createCluster(NS, "no-templates", { replicas: 1, version: "v1.31.0" });
    await kubeRequestOk(
      stack.kubeConfig,
      `/apis/${INFRA_GROUP}/${TEST_VERSION}/namespaces/${NS}/testmachinetemplates/no-templates-infra`,
      { method: "DELETE" },
    );
    await stack.createCluster(NS, "garbage-ca", { replicas: 1, version: "v1.31.0" });
    await kubeRequestOk(stack.kubeConfig, `/api/v1/namespaces/${NS}/secrets`, {
      body: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "garbage-ca-etcd", namespace: NS, labels: { [LABEL_CLUSTER_NAME]: "garbage-ca" } },
        type: CLUSTER_SECRET_TYPE,
        data: {
          "tls.crt": Buffer.from("not a certificate").toString("base64"),
          "tls.key": Buffer.from("not a key").toString("base64"),
        },
      },
    });
    await stack.createCluster(NS, "healthy", { replicas: 1, version: "v1.31.0" });
    await stack.startController();
  });

  after(async () => {
    await stack?.stop();
  });

  it("reconciles a healthy QuorumControlPlane next to two broken ones", async () => {
    await stack.waitConverged(NS, "healthy", 1);
  });

  it("names the missing infrastructure template and how to fix it", async () => {
    const conditions = await conditionEventually(stack, "no-templates", "Reconciled");
    const reconciled = conditions?.find((condition) => condition.type === "Reconciled");
    assert.match(
      reconciled?.message ?? "",
      /TestMachineTemplate failures\/no-templates-infra referenced by QuorumControlPlane failures\/no-templates spec\.machineTemplate\.spec\.infrastructureRef was not found: create it or correct the reference/,
    );
    const qcp = await stack.getControlPlane(NS, "no-templates");
    assert.match(qcp.status?.nextAction?.message ?? "", /no-templates-infra/);
  });

  it("leaves a healthy Cluster's Machines and members alone when a copy-pasted second QuorumControlPlane is labelled for it, and says why", async () => {
    // Issue 12, bug 4: the copy used to see the first one's members as ghosts and remove them one by one.
    const before = await stack.waitConverged(NS, "healthy", 1);
    const machinesBefore = (await stack.machines(NS, "healthy")).map((machine) => machine.metadata.name);
    await kubeRequestOk(stack.kubeConfig, `/apis/${API_VERSION}/namespaces/${NS}/quorumcontrolplanes`, {
      body: {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: "healthy-copy", namespace: NS, labels: { [LABEL_CLUSTER_NAME]: "healthy" } },
        spec: before.spec,
      },
    });
    const deadline = Date.now() + 60_000;
    let copy = await stack.getControlPlane(NS, "healthy-copy");
    while (
      !copy.status?.conditions?.some(
        (condition) => condition.type === "OwnershipConflict" && condition.status === "True",
      )
    ) {
      if (Date.now() > deadline)
        throw new Error(
          `QuorumControlPlane ${NS}/healthy-copy never reported OwnershipConflict; status: ${JSON.stringify(copy.status)}`,
        );
      await sleep(300);
      copy = await stack.getControlPlane(NS, "healthy-copy");
    }
    const conflict = copy.status?.conditions?.find((condition) => condition.type === "OwnershipConflict");
    assert.match(
      conflict?.message ?? "",
      /Cluster failures\/healthy names QuorumControlPlane failures\/healthy in spec\.controlPlaneRef, not this QuorumControlPlane: Quorum does nothing here/,
    );
    assert.equal(copy.status?.nextAction?.blockedBy, "QuorumControlPlane failures/healthy");
    // A few reconciles of both later, nothing has moved: same Machines, none deleting, the same healthy member.
    await sleep(5_000);
    const machinesAfter = await stack.machines(NS, "healthy");
    assert.deepEqual(
      machinesAfter.map((machine) => machine.metadata.name),
      machinesBefore,
    );
    assert.ok(
      machinesAfter.every(
        (machine) =>
          !machine.metadata.deletionTimestamp && machine.metadata.labels?.[LABEL_CONTROL_PLANE_NAME] === "healthy",
      ),
    );
    const after = await stack.waitConverged(NS, "healthy", 1);
    assert.deepEqual(
      after.status?.etcd?.members?.map((member) => member.id),
      before.status?.etcd?.members?.map((member) => member.id),
    );
    assert.equal((await stack.getControlPlane(NS, "healthy-copy")).status?.replicas ?? 0, 0);
  });

  it("names the garbage CA Secret and leaves it untouched", async () => {
    const conditions = await conditionEventually(stack, "garbage-ca", "CertificatesAvailable");
    const certificates = conditions?.find((condition) => condition.type === "CertificatesAvailable");
    assert.match(certificates?.message ?? "", /failures\/garbage-ca-etcd/);
    const secret = await kubeRequestOk<{ data: Record<string, string> }>(
      stack.kubeConfig,
      `/api/v1/namespaces/${NS}/secrets/garbage-ca-etcd`,
    );
    assert.equal(
      Buffer.from(secret.data["tls.crt"], "base64").toString(),
      "not a certificate",
      "a user's Secret is never overwritten",
    );
  });

  it("asks for a restore when a user deletes the etcd CA Secret of the running cluster, and creates no new CA", async () => {
    await stack.waitConverged(NS, "healthy", 1);
    const machinesBefore = (await stack.getControlPlane(NS, "healthy")).status?.replicas;
    await kubeRequestOk(stack.kubeConfig, `/api/v1/namespaces/${NS}/secrets/healthy-etcd`, { method: "DELETE" });
    const conditions = await conditionEventually(stack, "healthy", "CertificatesAvailable");
    const certificates = conditions?.find((condition) => condition.type === "CertificatesAvailable");
    assert.match(
      certificates?.message ?? "",
      /^Secret failures\/healthy-etcd not found, but the cluster is running \(.*\): restore failures\/healthy-etcd from backup; Quorum does not regenerate/,
    );
    // A scale-up would join a Machine with certificates from that CA: asked for one, Quorum waits instead, and a few
    // more reconciles (the controller polls etcd every second in this stack) create nothing.
    await stack.patchSpec(NS, "healthy", { replicas: 3 });
    await sleep(5_000);
    const waiting = await stack.getControlPlane(NS, "healthy");
    assert.match(
      waiting.status?.nextAction?.message ?? "",
      /healthy-etcd/,
      `nextAction names the missing Secret: ${JSON.stringify(waiting.status?.nextAction)}`,
    );
    assert.equal((await stack.machines(NS, "healthy")).length, 1, "no Machine joined with a CA nobody can restore");
    const secrets = await kubeRequestOk<{ items: { metadata: { name: string } }[] }>(
      stack.kubeConfig,
      `/api/v1/namespaces/${NS}/secrets?labelSelector=${encodeURIComponent(`${LABEL_CLUSTER_NAME}=healthy`)}`,
    );
    assert.ok(!secrets.items.some((secret) => secret.metadata.name === "healthy-etcd"), "no new etcd CA Secret");
    assert.equal(
      (await stack.getControlPlane(NS, "healthy")).status?.replicas,
      machinesBefore,
      "no Machine was created or deleted",
    );
  });
});
