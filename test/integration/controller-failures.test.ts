// User mistakes become conditions that name the cause and the fix, and one broken QuorumControlPlane does not stop
// the controller from reconciling the others.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CLUSTER_SECRET_TYPE, LABEL_CLUSTER_NAME } from "../../src/api/constants.ts";
import type { QuorumControlPlane } from "../../src/api/types.ts";
import { kubeRequestOk } from "../env/kube.ts";
import { startStack, type ControllerStack } from "./controller/stack.ts";
import { INFRA_GROUP, TEST_VERSION } from "./controller/test-kinds.ts";

const NS = "failures";

async function conditionEventually(stack: ControllerStack, name: string, type: string, timeoutMs = 60_000): Promise<NonNullable<QuorumControlPlane["status"]>["conditions"]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const qcp = await stack.getControlPlane(NS, name);
    const condition = qcp.status?.conditions?.find((candidate) => candidate.type === type && candidate.status === "False");
    if (condition) return qcp.status?.conditions;
    if (Date.now() > deadline) throw new Error(`QuorumControlPlane ${NS}/${name} never got ${type}=False; status: ${JSON.stringify(qcp.status)}`);
    await sleep(300);
  }
}

describe("broken QuorumControlPlanes", { timeout: 600_000 }, () => {
  let stack: ControllerStack;

  before(async () => {
    stack = await startStack();
    await stack.createCluster(NS, "no-templates", { replicas: 1, version: "v1.31.0" });
    await kubeRequestOk(stack.kubeConfig, `/apis/${INFRA_GROUP}/${TEST_VERSION}/namespaces/${NS}/testmachinetemplates/no-templates-infra`, { method: "DELETE" });
    await stack.createCluster(NS, "garbage-ca", { replicas: 1, version: "v1.31.0" });
    await kubeRequestOk(stack.kubeConfig, `/api/v1/namespaces/${NS}/secrets`, {
      body: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "garbage-ca-etcd", namespace: NS, labels: { [LABEL_CLUSTER_NAME]: "garbage-ca" } },
        type: CLUSTER_SECRET_TYPE,
        data: { "tls.crt": Buffer.from("not a certificate").toString("base64"), "tls.key": Buffer.from("not a key").toString("base64") },
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
    assert.match(reconciled?.message ?? "", /TestMachineTemplate failures\/no-templates-infra referenced by QuorumControlPlane failures\/no-templates spec\.machineTemplate\.infrastructureRef was not found: create it or correct the reference/);
    const qcp = await stack.getControlPlane(NS, "no-templates");
    assert.match(qcp.status?.nextAction?.message ?? "", /no-templates-infra/);
  });

  it("names the garbage CA Secret and leaves it untouched", async () => {
    const conditions = await conditionEventually(stack, "garbage-ca", "CertificatesAvailable");
    const certificates = conditions?.find((condition) => condition.type === "CertificatesAvailable");
    assert.match(certificates?.message ?? "", /failures\/garbage-ca-etcd/);
    const secret = await kubeRequestOk<{ data: Record<string, string> }>(stack.kubeConfig, `/api/v1/namespaces/${NS}/secrets/garbage-ca-etcd`);
    assert.equal(Buffer.from(secret.data["tls.crt"], "base64").toString(), "not a certificate", "a user's Secret is never overwritten");
  });

  it("asks for a restore when a user deletes the etcd CA Secret of the running cluster, and creates no new CA", async () => {
    await stack.waitConverged(NS, "healthy", 1);
    const machinesBefore = (await stack.getControlPlane(NS, "healthy")).status?.replicas;
    await kubeRequestOk(stack.kubeConfig, `/api/v1/namespaces/${NS}/secrets/healthy-etcd`, { method: "DELETE" });
    const conditions = await conditionEventually(stack, "healthy", "CertificatesAvailable");
    const certificates = conditions?.find((condition) => condition.type === "CertificatesAvailable");
    assert.match(certificates?.message ?? "", /^Secret failures\/healthy-etcd not found, but the cluster is running \(.*\): restore failures\/healthy-etcd from backup; Quorum does not regenerate/);
    // A few more reconciles (the controller polls etcd every second in this stack) still create nothing.
    await sleep(3_000);
    const secrets = await kubeRequestOk<{ items: { metadata: { name: string } }[] }>(stack.kubeConfig, `/api/v1/namespaces/${NS}/secrets?labelSelector=${encodeURIComponent(`${LABEL_CLUSTER_NAME}=healthy`)}`);
    assert.ok(!secrets.items.some((secret) => secret.metadata.name === "healthy-etcd"), "no new etcd CA Secret");
    assert.equal((await stack.getControlPlane(NS, "healthy")).status?.replicas, machinesBefore, "no Machine was created or deleted");
  });
});
