// How the management adapter reports a refused owner-reference patch: in one line naming the object, the HTTP code
// and the Status reason, with the code kept so that a conflict is retried (not the response's body and headers).
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { ManagementClient } from "../../../../src/adapters/capi/management.ts";
import type { Unstructured } from "../../../../src/api/objects.ts";
import { isConflict } from "../../../../src/ports/index.ts";

const CONFLICT = {
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Failure",
  message:
    'Operation cannot be fulfilled on testmachinetemplates.infrastructure.cluster.x-k8s.io "infra": the object has been modified; please apply your changes to the latest version and try again',
  reason: "Conflict",
  details: { name: "infra", group: "infrastructure.cluster.x-k8s.io", kind: "testmachinetemplates" },
  code: 409,
};

let server: Server;
let client: ManagementClient;

before(async () => {
  server = createServer((request, response) => {
    request.resume();
    response.writeHead(409, { "content-type": "application/json", "audit-id": "3f0c1a7e-0000-4000-8000-000000000000" });
    response.end(JSON.stringify(CONFLICT));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      { name: "c", server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
    ],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  client = new ManagementClient(kubeConfig);
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("a refused owner-reference patch", () => {
  it("is one line naming the template, the HTTP code and the reason, and is still a conflict", async () => {
    const template: Unstructured = {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
      kind: "TestMachineTemplate",
      metadata: { name: "infra", namespace: "scale-001", resourceVersion: "7" },
    };
    const error = await client.setOwnerReferences(template, []).then(
      () => assert.fail("the patch should be refused"),
      (refused: unknown) => refused,
    );
    assert.ok(isConflict(error), String(error));
    const message = error instanceof Error ? error.message : String(error);
    assert.equal(
      message,
      `TestMachineTemplate scale-001/infra: patching metadata.ownerReferences was refused with HTTP 409 (Conflict): ${CONFLICT.message}`,
    );
  });
});
