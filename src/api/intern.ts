// One copy of each short string in the informer caches. JSON.parse makes a new string for every value it reads, so
// each cached Machine, Cluster, QuorumControlPlane and Secret carried its own "controlplane.cluster.x-k8s.io/v1beta1",
// condition types and reasons, "nothing to do: ..." messages: 8 MB of duplicates at 1,000 clusters (issue 19, heap
// snapshot of the scale benchmark's controller).
//
// A string used as a property name is internalized: V8 keeps one copy in its string table, which holds its strings
// weakly, so nothing here grows with strings no longer used (a Map of strings would, until pruned).

/** Longer strings (certificates, keys, kubeconfigs) are rarely equal, and internalizing them costs a hash of each. */
export const MAX_INTERNED_LENGTH = 256;

/** The one copy of `text` the process's string table holds (short strings only; longer ones as they are). */
export function internString(text: string): string {
  if (text.length > MAX_INTERNED_LENGTH) return text;
  // An array-index-like key ("12") is stored as a number, and comes back as a new string: no worse than before.
  return Object.keys({ [text]: 0 })[0] ?? text;
}

/** A copy of JSON data (objects, arrays, strings, numbers, booleans, null) with its short strings interned. */
export function internStrings<T>(value: T): T {
  return internValue(value) as T;
}

function internValue(value: unknown): unknown {
  if (typeof value === "string") return internString(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(internValue);
  const copy: Record<string, unknown> = {};
  for (const [field, inner] of Object.entries(value as Record<string, unknown>)) copy[field] = internValue(inner);
  return copy;
}
