// What a failed Secret write tells the user: a namespace being deleted is said to be so, not an RBAC problem
// (issue 13: a namespace in Terminating showed "grant Quorum's ServiceAccount ... secrets").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiException, type CoreV1Api } from "@kubernetes/client-node";
import { coreV1SecretStore, type SecretObject } from "../../../../src/adapters/certs/secret-store.ts";

const secret: SecretObject = { metadata: { name: "demo-ca", namespace: "team-a" }, data: {} };

function refusingCreate(body: unknown): CoreV1Api {
  return {
    createNamespacedSecret: async () => {
      throw new ApiException(403, "Forbidden", JSON.stringify(body), {});
    },
  } as unknown as CoreV1Api;
}

async function createError(body: unknown): Promise<string> {
  const error = await coreV1SecretStore(refusingCreate(body))
    .create(secret)
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  assert.ok(error instanceof Error, "the create must fail");
  return error.message;
}

describe("a Secret create refused with 403", () => {
  it("in a namespace being deleted says so and asks for no RBAC", async () => {
    const message = await createError({
      kind: "Status",
      status: "Failure",
      reason: "Forbidden",
      code: 403,
      message:
        'secrets "demo-ca" is forbidden: unable to create new content in namespace team-a because it is being terminated',
      details: {
        name: "demo-ca",
        kind: "secrets",
        causes: [
          {
            type: "NamespaceTerminating",
            message: "namespace team-a is being terminated",
            field: "metadata.namespace",
          },
        ],
      },
    });
    assert.match(message, /namespace team-a is being deleted/);
    assert.doesNotMatch(message, /grant/);
  });

  it("for any other reason asks to grant Quorum's ServiceAccount access to Secrets", async () => {
    const message = await createError({
      kind: "Status",
      reason: "Forbidden",
      code: 403,
      message:
        'secrets is forbidden: User "system:serviceaccount:quorum-system:quorum" cannot create resource "secrets"',
    });
    assert.match(message, /grant Quorum's ServiceAccount get\/create\/update on secrets/);
  });
});
