/**
 * One copy per item of the header its sealed blobs share (docs/data-model.md, "Sealing"). A KmsSealer blob
 * (format in kms-sealer.ts) starts with a header of 6 + K + E bytes: version, flags, key id and
 * encrypted data key. Blobs sealed under one cached data key carry the same header, and an item
 * holds two or three of them, so the header is stored once per item instead of once per blob:
 *
 *   sealHeaders   list of binary: each header that two or more of the item's blobs share
 *   <blob attr>   binary: 0x00, u8 index into sealHeaders, then the blob after its header
 *                 (IV, tag, ciphertext); or the whole blob, unpacked, when its header is shared
 *                 with no other blob of the item or is not recognised
 *
 * Unpacking concatenates header and rest, so every blob comes back byte for byte and opens as it
 * was sealed (the GCM AAD covers the header). A blob's first byte is its version (1) in the sealer
 * format, so 0x00 cannot start a whole blob; an item that would still be ambiguous (a blob of
 * another format starting with 0x00) is stored unpacked. Items without `sealHeaders` (written
 * before items shared their headers, or with nothing shared) read unchanged. Pure: no I/O, no crypto.
 */

export const HEADERS_ATTRIBUTE = 'sealHeaders';

const SEALED_BLOB_VERSION = 1;
const REFERENCE_MARKER = 0x00;
const REFERENCE_BYTES = 2;
const MAX_HEADERS = 256;
/** IV and GCM tag: a blob is at least its header and these. */
const IV_AND_TAG_BYTES = 12 + 16;

type Item = Record<string, unknown>;

/** The length of a version 1 blob's header (6 + K + E), or undefined for anything else. */
export const sealedHeaderLength = (blob: Uint8Array): number | undefined => {
  if (blob.length < 6 || blob[0] !== SEALED_BLOB_VERSION) return undefined;
  const idLength = ((blob[2] ?? 0) << 8) | (blob[3] ?? 0);
  if (blob.length < 6 + idLength) return undefined;
  const keyLength = ((blob[4 + idLength] ?? 0) << 8) | (blob[5 + idLength] ?? 0);
  const length = 6 + idLength + keyLength;
  return keyLength > 0 && blob.length >= length + IV_AND_TAG_BYTES ? length : undefined;
};

const concat = (head: Uint8Array, tail: Uint8Array): Uint8Array => {
  const joined = new Uint8Array(head.length + tail.length);
  joined.set(head, 0);
  joined.set(tail, head.length);
  return joined;
};

const isReference = (value: Uint8Array): boolean =>
  value.length >= REFERENCE_BYTES && value[0] === REFERENCE_MARKER;

/**
 * The item with each header that two or more of its top-level binary attributes share stored
 * once in `sealHeaders`, those attributes replaced by references; the item itself when nothing
 * is shared (so an item of one blob is stored as the sealer returned it).
 */
export const packSealedHeaders = <T extends Item>(item: T): T & { sealHeaders?: Uint8Array[] } => {
  const blobs = Object.entries(item).flatMap(([name, value]) =>
    name !== HEADERS_ATTRIBUTE && value instanceof Uint8Array ? [{ name, value }] : [],
  );
  const counts = new Map<string, { header: Uint8Array; count: number }>();
  const headerKeys = blobs.map(({ value }) => {
    const length = sealedHeaderLength(value);
    if (length === undefined) return undefined;
    const header = value.subarray(0, length);
    const key = Buffer.from(header).toString('base64');
    const seen = counts.get(key);
    counts.set(key, { header, count: (seen?.count ?? 0) + 1 });
    return key;
  });
  const shared = [...counts].filter(([, { count }]) => count > 1).map(([key]) => key);
  if (shared.length === 0 || shared.length > MAX_HEADERS) return item;
  const packed: Item = { ...item };
  for (const [position, { name, value }] of blobs.entries()) {
    const index = shared.indexOf(headerKeys[position] ?? '');
    if (index >= 0) {
      const rest = value.subarray(counts.get(shared[index] as string)?.header.length);
      packed[name] = concat(Uint8Array.of(REFERENCE_MARKER, index), rest);
    } else if (isReference(value)) {
      // A blob of another format that reads as a reference: store the whole item as it is.
      return item;
    }
  }
  packed[HEADERS_ATTRIBUTE] = shared.map((key) => Uint8Array.from(counts.get(key)?.header ?? []));
  return packed as T & { sealHeaders: Uint8Array[] };
};

/**
 * The item as it was before packing: each reference replaced by its header followed by the rest,
 * `sealHeaders` removed. A reference to no stored header is left as it is (the sealer rejects
 * it as malformed), and an item without `sealHeaders` is returned unchanged.
 */
export const unpackSealedHeaders = <T extends Item>(item: T): T => {
  const { [HEADERS_ATTRIBUTE]: headers, ...rest } = item;
  if (!Array.isArray(headers)) return item;
  const unpacked: Item = rest;
  for (const [name, value] of Object.entries(rest)) {
    if (!(value instanceof Uint8Array) || !isReference(value)) continue;
    const header: unknown = headers[value[1] as number];
    if (header instanceof Uint8Array) unpacked[name] = concat(header, value.subarray(REFERENCE_BYTES));
  }
  return unpacked as T;
};
