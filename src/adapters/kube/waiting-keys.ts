// The keys waiting in a work queue, each at most once, and which one to take next.
//
// Without a rank they are taken in the order they were added (FIFO). With a rank (e.g. an object's creation
// time) the lowest rank goes first, equal ranks in the order they were added, so that of a thousand clusters created at once the first ones
// go through all their steps and are ready while the last ones wait, instead of every cluster taking step k before
// any takes step k + 1 and all of them finishing together at the end. A rank alone could starve a high-ranked
// key behind a stream of low-ranked ones, so every AGED_TAKE_EVERY-th take is the key that has waited longest.

/** One take in this many is the longest-waiting key rather than the lowest-ranked one. */
export const AGED_TAKE_EVERY = 5;

/** Orders keys: lower first. `undefined` (e.g. the object is not in the cache) ranks after every number. */
export type KeyRank = (key: string) => number | undefined;

interface Entry {
  key: string;
  seq: number;
  rank: number;
}

export class WaitingKeys {
  /** The sequence number of each waiting key's add: entries with another one are stale (taken or deleted). */
  private readonly seqOf = new Map<string, number>();
  private fifo: Entry[] = [];
  private fifoHead = 0;
  /** A binary min-heap on (rank, order added); only kept with a rank. */
  private readonly heap: Entry[] = [];
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
    const entry: Entry = { key, seq: this.nextSeq++, rank: this.rank?.(key) ?? Number.POSITIVE_INFINITY };
    this.seqOf.set(key, entry.seq);
    this.fifo.push(entry);
    if (this.rank) this.push(entry);
    return true;
  }

  delete(key: string): boolean {
    const deleted = this.seqOf.delete(key);
    if (this.seqOf.size === 0) this.clear();
    return deleted;
  }

  clear(): void {
    this.seqOf.clear();
    this.fifo = [];
    this.fifoHead = 0;
    this.heap.length = 0;
  }

  /** Removes and returns the key to run next, or undefined when none waits. */
  take(): string | undefined {
    if (this.seqOf.size === 0) return undefined;
    this.takes++;
    const entry = !this.rank || this.takes % AGED_TAKE_EVERY === 0 ? this.oldest() : this.lowest();
    if (!entry) return undefined;
    this.delete(entry.key);
    return entry.key;
  }

  private live(entry: Entry): boolean {
    return this.seqOf.get(entry.key) === entry.seq;
  }

  private oldest(): Entry | undefined {
    while (this.fifoHead < this.fifo.length) {
      const entry = this.fifo[this.fifoHead++];
      if (this.fifoHead > 1024 && this.fifoHead * 2 > this.fifo.length) {
        this.fifo = this.fifo.slice(this.fifoHead);
        this.fifoHead = 0;
      }
      if (this.live(entry)) return entry;
    }
    return undefined;
  }

  private lowest(): Entry | undefined {
    while (this.heap.length > 0) {
      const entry = this.pop();
      if (this.live(entry)) return entry;
    }
    return undefined;
  }

  private before(a: Entry, b: Entry): boolean {
    return a.rank !== b.rank ? a.rank < b.rank : a.seq < b.seq;
  }

  private push(entry: Entry): void {
    const heap = this.heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.before(heap[index], heap[parent])) break;
      [heap[index], heap[parent]] = [heap[parent], heap[index]];
      index = parent;
    }
  }

  private pop(): Entry {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop() as Entry;
    if (heap.length > 0) {
      heap[0] = last;
      let index = 0;
      for (;;) {
        const left = 2 * index + 1;
        const right = left + 1;
        let smallest = index;
        if (left < heap.length && this.before(heap[left], heap[smallest])) smallest = left;
        if (right < heap.length && this.before(heap[right], heap[smallest])) smallest = right;
        if (smallest === index) break;
        [heap[index], heap[smallest]] = [heap[smallest], heap[index]];
        index = smallest;
      }
    }
    return top;
  }
}
