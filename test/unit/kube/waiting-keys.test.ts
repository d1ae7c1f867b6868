import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AGED_TAKE_EVERY, WaitingKeys } from "../../../src/adapters/kube/waiting-keys.ts";

function takeAll(keys: WaitingKeys): string[] {
  const taken: string[] = [];
  for (let key = keys.take(); key !== undefined; key = keys.take()) taken.push(key);
  return taken;
}

describe("WaitingKeys", () => {
  it("without a rank, takes keys in the order they were added, each once", () => {
    const keys = new WaitingKeys();
    for (const key of ["c", "a", "b", "a", "c"]) keys.add(key);
    assert.equal(keys.size, 3);
    assert.deepEqual(takeAll(keys), ["c", "a", "b"]);
    assert.equal(keys.size, 0);
  });

  it("with a rank, takes the lowest rank first, equal ranks in the order they came, keys without a rank last", () => {
    const ranks: Record<string, number> = { old: 1, "mid-b": 5, mid: 5, young: 9 };
    const keys = new WaitingKeys((key) => ranks[key]);
    for (const key of ["young", "unknown", "mid-b", "old", "mid"]) keys.add(key);
    assert.deepEqual(takeAll(keys).slice(0, AGED_TAKE_EVERY - 1), ["old", "mid-b", "mid", "young"]);
  });

  it("gives the longest-waiting key every fifth take, so a stream of low ranks cannot starve a high one", () => {
    const keys = new WaitingKeys((key) => (key === "young" ? 100 : Number(key)));
    keys.add("young");
    const taken: string[] = [];
    // Older keys keep arriving: each take is followed by a new, lower-ranked key.
    for (let n = 0; taken.length < AGED_TAKE_EVERY; n++) {
      keys.add(String(n));
      taken.push(keys.take() as string);
    }
    assert.equal(taken.at(-1), "young");
    assert.equal(taken.filter((key) => key === "young").length, 1);
  });

  it("forgets a deleted key wherever it waited, and takes a re-added one once", () => {
    const keys = new WaitingKeys((key) => ({ a: 1, b: 2, c: 3 })[key]);
    for (const key of ["a", "b", "c"]) keys.add(key);
    assert.equal(keys.delete("a"), true);
    assert.equal(keys.has("a"), false);
    keys.add("a");
    assert.deepEqual(takeAll(keys).sort(), ["a", "b", "c"]);
    assert.equal(keys.take(), undefined);
  });

  it("keeps taking correctly through thousands of adds and deletes (the FIFO compacts, the heap skips stale entries)", () => {
    const keys = new WaitingKeys((key) => Number(key) % 97);
    const waiting = new Set<string>();
    for (let round = 0; round < 5000; round++) {
      const key = String(round % 700);
      keys.add(key);
      waiting.add(key);
      if (round % 3 === 0) {
        const taken = keys.take() as string;
        assert.ok(waiting.delete(taken), `took ${taken}, which was not waiting`);
      }
      if (round % 7 === 0 && keys.delete(String((round * 13) % 700))) waiting.delete(String((round * 13) % 700));
    }
    assert.equal(keys.size, waiting.size);
    assert.deepEqual(takeAll(keys).sort(), [...waiting].sort());
  });
});
