// waitUntilReady (test/env/processes.ts) says when the process was last seen not ready, which scenarios use to judge
// what happened while a member was certainly down (e2e/scenarios/member-down.ts).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { startProcess, waitUntilReady } from "../../../test/env/processes.ts";

const dir = mkdtempSync(join(tmpdir(), "quorum-unit-ready-"));
const proc = startProcess({ name: "sleep", command: "sleep", args: ["600"], logFile: join(dir, "sleep.log") });
after(async () => {
  await proc.stop(1_000);
  rmSync(dir, { recursive: true, force: true });
});

describe("waitUntilReady", () => {
  it("reports when the last probe that said 'not yet' returned, before the one that said ready", async () => {
    const answers: Array<boolean | string | Error> = [false, "HTTP 503", new Error("ECONNREFUSED"), true];
    const returned: number[] = [];
    const times = await waitUntilReady({
      process: proc,
      what: "a scripted probe",
      timeoutMs: 10_000,
      intervalMs: 20,
      probe: async () => {
        const answer = answers.shift() as boolean | string | Error;
        returned.push(Date.now());
        if (answer instanceof Error) throw answer;
        return answer;
      },
    });
    assert.equal(returned.length, 4);
    assert.ok(times.notReadyAt !== undefined && times.notReadyAt >= (returned[2] as number));
    assert.ok(times.notReadyAt < (returned[3] as number), "the last 'not yet' came before the probe that said ready");
    assert.ok(times.readyAt >= (returned[3] as number));
  });

  it("reports no 'not yet' time when the first probe said ready", async () => {
    const times = await waitUntilReady({
      process: proc,
      what: "a ready probe",
      timeoutMs: 1_000,
      probe: async () => true,
    });
    assert.equal(times.notReadyAt, undefined);
    assert.ok(times.readyAt <= Date.now());
  });
});
