// RFC 7386 JSON merge patch between two plain JSON values: what to send so that `before` becomes `after`.
// Returns undefined when they are equal, which is how the controller makes no write at idle.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function mergePatch(before: unknown, after: unknown): Json | undefined {
  if (isObject(before) && isObject(after)) {
    const patch: { [key: string]: Json } = {};
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (!(key in after) || after[key] === undefined) {
        if (key in before && before[key] !== undefined) patch[key] = null;
        continue;
      }
      const inner = key in before ? mergePatch(before[key], after[key]) : (after[key] as Json);
      if (inner !== undefined) patch[key] = inner;
    }
    return Object.keys(patch).length > 0 ? patch : undefined;
  }
  // Arrays and scalars are replaced whole, as merge patch prescribes.
  return deepEqual(before, after) ? undefined : (structuredClone(after) as Json);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, index) => deepEqual(item, b[index]));
  if (isObject(a) && isObject(b)) {
    const keys = new Set(
      [...Object.keys(a), ...Object.keys(b)].filter((key) => a[key] !== undefined || b[key] !== undefined),
    );
    return [...keys].every((key) => deepEqual(a[key], b[key]));
  }
  return false;
}
