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

/**
 * `value`, JSON data (objects, arrays, strings, numbers, booleans, null), with its short strings interned in place: the
 * objects stay those JSON.parse made, whose properties it sized exactly (a copy built property by property took more
 * heap than the duplicate strings it saved). Only for data nobody else holds yet, e.g. what an informer just parsed.
 */
export function internStrings<T>(value: T): T {
  return internValue(value) as T;
}

function internValue(value: unknown): unknown {
  if (typeof value === "string") return internString(value);
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) value[index] = internValue(value[index]);
    return value;
  }
  const fields = value as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    const inner = fields[field];
    if (typeof inner === "string") fields[field] = internString(inner);
    else if (typeof inner === "object" && inner !== null) internValue(inner);
  }
  return value;
}
