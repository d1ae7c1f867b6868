import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { internString, internStrings, MAX_INTERNED_LENGTH } from "../../../src/api/intern.ts";

describe("interning the strings of cached objects", () => {
  it("leaves the data equal to what it was, in the same objects and field order", () => {
    const text =
      '{"kind":"Machine","metadata":{"name":"m-1","labels":{"a":"b"},"generation":3},"status":{"conditions":[{"type":"Ready","status":"True"}],"ok":true,"none":null}}';
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const metadata = parsed.metadata;
    const interned = internStrings(parsed);
    assert.equal(interned, parsed);
    assert.equal(interned.metadata, metadata);
    assert.deepEqual(interned, JSON.parse(text));
    assert.equal(JSON.stringify(interned), text);
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
