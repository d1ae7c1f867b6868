import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatLabelValue } from "../../../src/api/label-value.ts";

describe("label values from object names", () => {
  // Expected values printed by CAPI v1.14.2's util/labels/format.MustFormatValue for the same inputs.
  const cases: [string, string][] = [
    ["cp", "cp"],
    ["a".repeat(63), "a".repeat(63)],
    ["x.y", "x.y"],
    ["a".repeat(64), "hash_2W8PhQ_z"],
    ["a-very-long-control-plane-name-that-is-definitely-longer-than-sixty-three-characters", "hash_E6ub4A_z"],
    ["-bad", "hash_XpfzOw_z"],
  ];
  for (const [name, expected] of cases) {
    it(`labels ${JSON.stringify(name.length > 20 ? `${name.slice(0, 12)}…(${name.length})` : name)} as CAPI does: ${expected.length > 20 ? "kept" : expected}`, () => {
      assert.equal(formatLabelValue(name), expected);
    });
  }
});
