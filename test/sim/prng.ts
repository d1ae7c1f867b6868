// The simulator's only source of randomness: a small seeded generator (mulberry32), so that a schedule seed
// replays the same world, faults and crashes bit for bit. Math.random() is never used in test/sim.

export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  uint32(): number {
    return Math.floor(this.next() * 4294967296) >>> 0;
  }

  /** An integer in [low, high], both inclusive. */
  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Prng.pick: cannot pick from an empty list");
    return items[Math.floor(this.next() * items.length)];
  }

  /** Picks by weight: [[value, weight], ...]. */
  weighted<T>(choices: readonly (readonly [T, number])[]): T {
    const total = choices.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.next() * total;
    for (const [value, weight] of choices) {
      roll -= weight;
      if (roll < 0) return value;
    }
    return choices[choices.length - 1][0];
  }

  /** An independent stream, so that drawing more in one concern (faults) does not shift another (crashes). */
  fork(): Prng {
    return new Prng(this.uint32());
  }
}

/** The seed of schedule `index` of a run started with `runSeed` (splitmix-style mixing, never 0-biased). */
export function scheduleSeed(runSeed: number, index: number): number {
  let z = (Math.imul(runSeed >>> 0, 0x9e3779b1) + Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x21f0aaad) >>> 0;
  z = Math.imul(z ^ (z >>> 15), 0x735a2d97) >>> 0;
  return (z ^ (z >>> 15)) >>> 0;
}
