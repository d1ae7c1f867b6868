// The CLI contract others rely on (Makefile, CI, a developer replaying a failure): the exact last line, the exit
// code, a replay command per failure, and a step-by-step trace on replay.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../sim/main.ts", import.meta.url));

function sim(...args: string[]): { code: number | null; lines: string[] } {
  const run = spawnSync(process.execPath, ["--import", "tsx", MAIN, ...args], { encoding: "utf8", timeout: 120_000 });
  return { code: run.status, lines: run.stdout.trimEnd().split("\n") };
}

describe("npm run sim", () => {
  it("ends with the exact summary line and exits 0 when no rule is broken", () => {
    const { code, lines } = sim("--schedules", "20", "--seed", "1");
    assert.equal(lines.at(-1), "sim: 20 schedules, 0 violations, 0 stuck");
    assert.equal(code, 0);
  });

  it("prints a failing schedule's seed with a one-line replay command, exits 1, and the replay shows the trace", () => {
    const run = sim("--schedules", "300", "--seed", "1", "--variant", "random-scale-down", "--max-reports", "1");
    assert.equal(run.code, 1);
    assert.match(run.lines.at(-1)!, /^sim: 300 schedules, [1-9]\d* violations, \d+ stuck$/);
    const replay = run.lines
      .map((line) => /^ {2}replay: npm run sim -- (--replay (\d+) --trace --variant random-scale-down)$/.exec(line))
      .find(Boolean);
    assert.ok(replay, `no replay command in:\n${run.lines.join("\n")}`);

    const again = sim(...replay[1].split(" "));
    assert.equal(again.code, 1);
    assert.ok(
      again.lines.some((line) => /^#1 t\+10s /.test(line)),
      "the trace starts at step 1",
    );
    assert.ok(
      again.lines.some((line) => line.startsWith("VIOLATION [")),
      "the trace ends with the violation",
    );
    assert.equal(again.lines.at(-1), "sim: 1 schedules, 1 violations, 0 stuck");
  });

  it("refuses an unknown variant and names the ones it knows", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", MAIN, "--variant", "nope"], { encoding: "utf8" });
    assert.equal(run.status, 2);
    assert.match(run.stderr, /unknown --variant "nope".*ghost-blind/);
  });
});
