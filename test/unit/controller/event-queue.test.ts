import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { QuorumControlPlane } from "../../../src/api/types.ts";
import { EVENTS_IN_FLIGHT, EventQueue, MAX_QUEUED_EVENTS } from "../../../src/controller/event-queue.ts";
import type { Logger } from "../../../src/ports/index.ts";

const controlPlane = {
  apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
  kind: "QuorumControlPlane",
  metadata: { namespace: "team-a", name: "prod", uid: "u1" },
  spec: {},
} as unknown as QuorumControlPlane;

/** An API server whose Event creates hang until the test answers them. */
function slowApi() {
  const pending: { reason: string; answer: (error?: Error) => void }[] = [];
  const send = (_cp: QuorumControlPlane, _type: "Normal" | "Warning", reason: string) =>
    new Promise<void>((resolve, reject) =>
      pending.push({ reason, answer: (error) => (error ? reject(error) : resolve()) }),
    );
  return { pending, send };
}

function recordingLog(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    warnings,
    debug: () => {},
    info: () => {},
    error: () => {},
    warn: (message: string) => warnings.push(message),
  };
}

const now = new Date("2030-01-01T00:00:00Z");

describe("EventQueue", () => {
  it("lets the reconcile go on before the API server has answered, and sends every Event", async () => {
    const api = slowApi();
    const queue = new EventQueue(api.send, recordingLog());
    await queue.event(controlPlane, "Normal", "CreateMachine", "created prod-abc12", now);
    assert.deepEqual(
      api.pending.map((call) => call.reason),
      ["CreateMachine"],
      "sent at once, still unanswered",
    );
    let idle = false;
    const idled = queue.idle().then(() => (idle = true));
    await Promise.resolve();
    assert.equal(idle, false);
    api.pending[0].answer();
    await idled;
  });

  it(`sends at most ${EVENTS_IN_FLIGHT} at once, the rest in the order they came`, async () => {
    const api = slowApi();
    const queue = new EventQueue(api.send, recordingLog());
    for (let index = 0; index < EVENTS_IN_FLIGHT + 3; index++)
      await queue.event(controlPlane, "Normal", `R${index}`, "m", now);
    assert.equal(api.pending.length, EVENTS_IN_FLIGHT);
    api.pending[0].answer();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(api.pending.length, EVENTS_IN_FLIGHT + 1);
    assert.equal(api.pending.at(-1)?.reason, `R${EVENTS_IN_FLIGHT}`);
    for (let sent = 0; sent < api.pending.length; sent++) {
      api.pending[sent].answer();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await queue.idle();
    assert.deepEqual(
      api.pending.map((call) => call.reason),
      Array.from({ length: EVENTS_IN_FLIGHT + 3 }, (_, index) => `R${index}`),
    );
  });

  it("drops Events past the queue's bound while the API server does not answer, and says so once", async () => {
    const api = slowApi();
    const log = recordingLog();
    const queue = new EventQueue(api.send, log);
    const total = EVENTS_IN_FLIGHT + MAX_QUEUED_EVENTS + 5;
    for (let index = 0; index < total; index++) await queue.event(controlPlane, "Normal", "Step", "m", now);
    assert.equal(queue.dropped, 5);
    assert.equal(log.warnings.length, 1);
    assert.match(log.warnings[0], /dropping Events: 1000 wait to be sent/);
  });

  it("logs an Event the API server refused, naming the object, and goes on with the next", async () => {
    const api = slowApi();
    const log = recordingLog();
    const queue = new EventQueue(api.send, log);
    await queue.event(controlPlane, "Warning", "DeleteMachineFailed", "m", now);
    api.pending[0].answer(new Error('namespaces "team-a" is being terminated'));
    await queue.idle();
    assert.deepEqual(log.warnings, ['could not record an Event: namespaces "team-a" is being terminated']);
    await queue.event(controlPlane, "Normal", "CreateMachine", "m", now);
    assert.equal(api.pending.length, 2);
  });
});
