// Keeping only the fields a type declares: the informer caches hold a projection of each object onto the type the
// controller reads it as (src/controller/cached-fields.ts), so fields nobody reads cost no memory.

/**
 * Which fields of `T` to keep. Every field of `T` must be named (the compiler checks it), and no other: `true` keeps
 * a field's whole value, a nested `Keep` keeps only the fields it names (of each element, for a list). So a field
 * added to `T` does not compile until it is kept, and code that reads the type reads only kept fields.
 */
export type Keep<T> = { readonly [Field in keyof T]-?: KeepValue<Exclude<T[Field], undefined>> };

type KeepValue<V> =
  | true
  | (V extends readonly (infer Element)[] ? (Element extends object ? Keep<Element> : never) : never)
  | (V extends readonly unknown[] ? never : V extends object ? Keep<V> : never);

/**
 * `value` with only the fields `keep` names, in `value`'s own order (code compares some lists as JSON text). A value
 * whose shape is not what `keep` expects (a scalar where an object belongs) is kept as it is: the reader validates.
 */
export function project<T>(value: unknown, keep: Keep<T>): T {
  return pick(value, keep as unknown as AnyKeep) as T;
}

type AnyKeep = true | { readonly [field: string]: AnyKeep };

function pick(value: unknown, keep: AnyKeep): unknown {
  if (keep === true || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((element: unknown) => pick(element, keep));
  const fields = Object.entries(value as Record<string, unknown>);
  const kept: Record<string, unknown> = {};
  for (const [field, inner] of fields) {
    const keepField = Object.hasOwn(keep, field) ? keep[field] : undefined;
    const picked = keepField === undefined ? undefined : pick(inner, keepField);
    if (picked !== undefined) kept[field] = picked;
  }
  // An object of nothing but dropped fields is dropped too (status.deprecated.v1beta1 of a Machine that never failed).
  return fields.length > 0 && Object.keys(kept).length === 0 ? undefined : kept;
}
