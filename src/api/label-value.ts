// Label values from object names, as CAPI makes them (util/labels/format.MustFormatValue in v1.14): a name that is a
// valid label value is kept; any other (in practice: longer than 63 characters, which an object name may be) becomes
// "hash_<fnv-32a of the name, base64url without padding>_z". KCP labels its Machines' control-plane-name this way;
// writing the name as it is makes the API server reject the Machine, and every selector on the label must hash too.

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const MAX_LABEL_VALUE_LENGTH = 63;

/** The label value for `value`: itself when it is a valid label value, else CAPI's hash of it. */
export function formatLabelValue(value: string): string {
  if (value.length <= MAX_LABEL_VALUE_LENGTH && LABEL_VALUE.test(value)) return value;
  return `hash_${Buffer.from(fnv32a(value)).toString("base64url")}_z`;
}

/** FNV-1a, 32 bits, over the UTF-8 bytes, big-endian as Go's hash.Sum appends it. */
function fnv32a(value: string): Uint8Array {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(value)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, hash);
  return bytes;
}
