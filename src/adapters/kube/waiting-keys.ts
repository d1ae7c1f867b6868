// The keys waiting in a work queue, each at most once, and which one to take next.
//
// Without a rank they are taken in the order they were added (FIFO). With a rank (e.g. an object's creation
// time) the lowest rank goes first, equal ranks in the order they were added, so that of a thousand clusters created
// at once the first ones go through all their steps and are ready while the last ones wait, instead of every cluster
// taking step k before any takes step k + 1 and all of them finishing together at the end.
//
// A rank alone would let an endless stream of keys at one rank (running clusters, all at rank 0 in the controller)
// starve every key ranked above it, so every FAIR_TAKE_EVERY-th take is the first key of the second-lowest rank
// waiting. It is not the longest-waiting key: in a burst that is always a cluster nobody has started, and starting
// one every fifth take spreads the work over all of them again (in a model of 700 clusters of 15 steps each, the
// median finished a third later). A key behind keys of two or more lower ranks waits until those are taken; the
// ranks a caller gives must make that finite (the controller's: a cluster being created leaves its rank once it is
// initialized).

/** One take in this many is the first key of the second-lowest rank waiting rather than of the lowest. */
export const FAIR_TAKE_EVERY = 5;

/** Orders keys: lower first. `undefined` ranks after every number. */
export type KeyRank = (key: string) => number | undefined;

interface Entry {
  key: string;
  seq: number;
}

/** The keys added at one rank, in the order they were added (stale entries are skipped when met). */
class RankQueue {
  private entries: Entry[] = [];
  private head = 0;

  push(entry: Entry): void {
    this.entries.push(entry);
  }

  /** The first live entry, stale ones before it dropped. */
  first(live: (entry: Entry) => boolean): Entry | undefined {
    while (this.head < this.entries.length) {
      const entry = this.entries[this.head];
      if (live(entry)) return entry;
      this.head++;
      if (this.head > 1024 && this.head * 2 > this.entries.length) {
        this.entries = this.entries.slice(this.head);
        this.head = 0;
      }
    }
    return undefined;
  }
}

export class WaitingKeys {
  /** The sequence number of each waiting key's add: entries with another one are stale (taken or deleted). */
  private readonly seqOf = new Map<string, number>();
  private readonly byRank = new Map<number, RankQueue>();
  /** A binary min-heap of the ranks in `byRank`. */
  private readonly ranks: number[] = [];
  private nextSeq = 0;
  private takes = 0;

  constructor(private readonly rank?: KeyRank) {}

  get size(): number {
    return this.seqOf.size;
  }

  has(key: string): boolean {
    return this.seqOf.has(key);
  }

  /** Adds `key` unless it already waits (it keeps its place); returns whether it was added. */
  add(key: string): boolean {
    if (this.seqOf.has(key)) return false;
    const entry: Entry = { key, seq: this.nextSeq++ };
    this.seqOf.set(key, entry.seq);
    const ranked = this.rank ? this.rank(key) : 0;
    const rank = ranked === undefined || Number.isNaN(ranked) ? Number.POSITIVE_INFINITY : ranked;
    let queue = this.byRank.get(rank);
    if (!queue) {
      queue = new RankQueue();
      this.byRank.set(rank, queue);
      this.pushRank(rank);
    }
    queue.push(entry);
    return true;
  }

  delete(key: string): boolean {
    const deleted = this.seqOf.delete(key);
    if (this.seqOf.size === 0) this.clear();
    return deleted;
  }

  clear(): void {
    this.seqOf.clear();
    this.byRank.clear();
    this.ranks.length = 0;
  }

  /** Removes and returns the key to run next, or undefined when none waits. */
  take(): string | undefined {
    if (this.seqOf.size === 0) return undefined;
    this.takes++;
    const lowest = this.lowestRank();
    if (lowest === undefined) return undefined;
    let rank = lowest;
    if (this.takes % FAIR_TAKE_EVERY === 0) {
      // The second-lowest rank: take the lowest out of the heap, look, put it back.
      this.popRank();
      rank = this.lowestRank() ?? lowest;
      this.pushRank(lowest);
    }
    const entry = this.byRank.get(rank)?.first(this.live) as Entry;
    this.delete(entry.key);
    return entry.key;
  }

  private readonly live = (entry: Entry): boolean => this.seqOf.get(entry.key) === entry.seq;

  /** The lowest rank with a live key, ranks left with none dropped. */
  private lowestRank(): number | undefined {
    while (this.ranks.length > 0) {
      const rank = this.ranks[0];
      if (this.byRank.get(rank)?.first(this.live)) return rank;
      this.byRank.delete(rank);
      this.popRank();
    }
    return undefined;
  }

  private pushRank(rank: number): void {
    const heap = this.ranks;
    heap.push(rank);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent] <= heap[index]) break;
      [heap[index], heap[parent]] = [heap[parent], heap[index]];
      index = parent;
    }
  }

  private popRank(): void {
    const heap = this.ranks;
    const last = heap.pop() as number;
    if (heap.length === 0) return;
    heap[0] = last;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && heap[left] < heap[smallest]) smallest = left;
      if (right < heap.length && heap[right] < heap[smallest]) smallest = right;
      if (smallest === index) break;
      [heap[index], heap[smallest]] = [heap[smallest], heap[index]];
      index = smallest;
    }
  }
}
