import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { crashInjectorFromEnv } from "../../../src/controller/crash.ts";

class Exited extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}
const exit = (code: number): never => {
  throw new Exited(code);
};

describe("QUORUM_CRASH_AFTER", () => {
  it("does nothing when unset", () => {
    const injector = crashInjectorFromEnv(undefined, exit);
    for (let i = 0; i < 5; i++) injector.afterAction("RemoveMember");
  });

  it("exits with 137 right after the n-th action of the named kind and not before", () => {
    const injector = crashInjectorFromEnv("RemoveMember:2", exit);
    injector.afterAction("RemoveMember");
    injector.afterAction("DeleteMachine");
    assert.throws(
      () => injector.afterAction("RemoveMember"),
      (error: unknown) => error instanceof Exited && error.code === 137,
    );
  });

  it("rejects an unknown action kind with the list of valid ones", () => {
    assert.throws(
      () => crashInjectorFromEnv("Explode:1", exit),
      /QUORUM_CRASH_AFTER="Explode:1" is invalid: use <action>:<n> with an action among CreateMachine/,
    );
  });
});
