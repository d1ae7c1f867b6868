// --watch-filter on the real stack with the real CAPI core (issue 15, item 5): two Clusters in one namespace, one
// labelled cluster.x-k8s.io/watch-filter=shard-a (its Cluster and QuorumControlPlane) and one not; the controller runs
// with --watch-filter=shard-a. The labelled control plane converges with each Machine created once (before the fix
// Quorum's label-filtered Machine cache never showed the unlabelled Machine it had just created, and it "created" it
// again every 10 s); the other control plane gets no write at all.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { API_VERSION, CAPI_API_VERSION, LABEL_WATCH_FILTER } from "../../src/api/constants.ts";
import { kubeRequestOk } from "../env/kube.ts";
import { startStack, type ControllerStack } from "./controller/stack.ts";

const NS = "shards";
const SHARD = "shard-a";

interface AuditEvent {
  user: { username?: string };
  verb: string;
  stage?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
}

describe("--watch-filter", { timeout: 600_000 }, () => {
  let stack: ControllerStack;

  before(async () => {
    stack = await startStack({ capi: true, audit: true });
    await stack.createCluster(NS, "labelled", { replicas: 3, version: "v1.31.0" });
    await stack.createCluster(NS, "other", { replicas: 3, version: "v1.31.0" });
    const label = { metadata: { labels: { [LABEL_WATCH_FILTER]: SHARD } } };
    await kubeRequestOk(stack.kubeConfig, `/apis/${CAPI_API_VERSION}/namespaces/${NS}/clusters/labelled`, {
      method: "PATCH",
      body: label,
    });
    await kubeRequestOk(stack.kubeConfig, `/apis/${API_VERSION}/namespaces/${NS}/quorumcontrolplanes/labelled`, {
      method: "PATCH",
      body: label,
    });
    await stack.startController({ args: ["--watch-filter", SHARD] });
  });

  after(async () => {
    await stack?.stop();
  });

  it("converges the labelled control plane, creating each Machine once, and never touches the other", async () => {
    const converged = await stack.waitConverged(NS, "labelled", 3);
    assert.equal(converged.status?.deprecated?.v1beta1?.readyReplicas, 3);
    const machines = await stack.machines(NS, "labelled");
    assert.deepEqual(
      machines.map((machine) => machine.metadata.labels?.[LABEL_WATCH_FILTER]),
      [SHARD, SHARD, SHARD],
      "the Machines carry the control plane's watch-filter label, for a CAPI core sharded the same way",
    );
    // Long enough for a repeated create to show: the read-your-writes wait that expired before was 10 s.
    await sleep(12_000);
    const writes = controllerWrites(stack.auditLog as string, "quorum-controller");
    const machineCreates = writes.filter(
      (event) => event.verb === "create" && event.objectRef?.resource === "machines",
    );
    assert.equal(machineCreates.length, 3, `Machine creates: ${JSON.stringify(machineCreates.map(describeWrite))}`);
    assert.ok(
      machineCreates.every((event) => event.responseStatus?.code === 201),
      `every Machine create made a new Machine: ${JSON.stringify(machineCreates.map(describeWrite))}`,
    );
    assert.deepEqual(
      writes.filter((event) => event.objectRef?.name?.startsWith("other")).map(describeWrite),
      [],
      "writes to the unlabelled control plane's objects",
    );
    assert.deepEqual(await stack.machines(NS, "other"), []);
    const other = await stack.getControlPlane(NS, "other");
    assert.equal(other.status, undefined, "the unlabelled QuorumControlPlane has no status from Quorum");
  });
});

function describeWrite(event: AuditEvent): string {
  return `${event.verb} ${event.objectRef?.resource}/${event.objectRef?.name ?? ""} -> ${event.responseStatus?.code}`;
}

/** The controller's completed write requests, from the API server's audit log. */
function controllerWrites(auditLog: string, username: string): AuditEvent[] {
  return readFileSync(auditLog, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((event) => event.user.username === username && event.stage === "ResponseComplete");
}
