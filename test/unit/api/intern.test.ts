import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { internString, internStrings, MAX_INTERNED_LENGTH } from "../../../src/api/intern.ts";

describe("interning the strings of cached objects", () => {
  it("returns a deep copy equal to the input, in the same field order", () => {
    const parsed = JSON.parse(
      '{"kind":"Machine","metadata":{"name":"m-1","labels":{"a":"b"},"generation":3},"status":{"conditions":[{"type":"Ready","status":"True"}],"ok":true,"none":null}}',
    ) as Record<string, unknown>;
    const interned = internStrings(parsed);
    assert.deepEqual(interned, parsed);
    assert.notEqual(interned, parsed);
    assert.notEqual((interned.metadata as object) ?? 0, parsed.metadata);
    assert.deepEqual(Object.keys(interned.metadata as object), ["name", "labels", "generation"]);
  });

  it("keeps one copy of a string that many parsed objects carry, so they take a fraction of the heap", () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const message = "nothing to do: 3 of 3 Machines up to date; etcd 3 of 3 voters healthy".padEnd(200, ".");
    const text = JSON.stringify({ message });
    const heapOf = (make: () => unknown) => {
      gc();
      const before = process.memoryUsage().heapUsed;
      const kept = Array.from({ length: 20_000 }, make);
      gc();
      const used = process.memoryUsage().heapUsed - before;
      assert.equal(kept.length, 20_000);
      return used;
    };
    const parsed = heapOf(() => JSON.parse(text));
    const interned = heapOf(() => internStrings(JSON.parse(text)));
    assert.ok(interned < parsed / 2, `interned ${interned} B, as parsed ${parsed} B`);
  });

  it("leaves long strings (certificates, kubeconfigs) and array-index-like strings as they are", () => {
    const long = "x".repeat(MAX_INTERNED_LENGTH + 1);
    assert.equal(internString(long), long);
    assert.equal(internString("12"), "12");
    assert.equal(internString(""), "");
  });
});
