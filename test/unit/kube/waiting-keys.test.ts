import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FAIR_TAKE_EVERY, WaitingKeys } from "../../../src/adapters/kube/waiting-keys.ts";

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
    assert.deepEqual(takeAll(keys).slice(0, FAIR_TAKE_EVERY - 1), ["old", "mid-b", "mid", "young"]);
  });

  it("gives every fifth take to the next rank up, so a stream of keys at one rank cannot starve the others", () => {
    // Running clusters share rank 0 and keep coming back (a rollout's events); a new cluster ranks above them.
    const keys = new WaitingKeys((key) => (key.startsWith("running") ? 0 : 5));
    keys.add("new");
    for (const key of ["running-a", "running-b", "running-c"]) keys.add(key);
    const taken: string[] = [];
    for (let n = 0; n < 2 * FAIR_TAKE_EVERY; n++) {
      const key = keys.take() as string;
      taken.push(key);
      if (key !== "new") keys.add(key);
    }
    assert.equal(taken.indexOf("new"), FAIR_TAKE_EVERY - 1);
    assert.equal(taken.filter((key) => key === "new").length, 1);
  });

  it("gives the fair take to a started cluster, not to the one nobody has started that waited longest", () => {
    // A burst: clusters 0 and 1 are under way (each is back as soon as it is taken: its next step's event), 2 to 9
    // were created with them and wait. Starting one of those every fifth take would spread the work over all ten.
    const keys = new WaitingKeys(Number);
    for (let i = 0; i < 10; i++) keys.add(String(i));
    const taken: string[] = [];
    for (let n = 0; n < 4 * FAIR_TAKE_EVERY; n++) {
      const key = keys.take() as string;
      taken.push(key);
      if (Number(key) < 2) keys.add(key);
    }
    assert.deepEqual([...new Set(taken)].sort(), ["0", "1"]);
  });

  it("ranks keys without a rank last, and still gives them the fair take behind a single lower rank", () => {
    const keys = new WaitingKeys((key) => (key === "gone" ? undefined : 0));
    keys.add("gone");
    for (const key of ["a", "b"]) keys.add(key);
    const taken: string[] = [];
    for (let n = 0; n < FAIR_TAKE_EVERY; n++) {
      const key = keys.take() as string;
      taken.push(key);
      if (key !== "gone") keys.add(key);
    }
    assert.equal(taken.at(-1), "gone");
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
