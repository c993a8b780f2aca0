import { createHash } from 'node:crypto';
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { type StoredTask, sameBytes } from '../../domain/projection.ts';
import { chunkSortKey, keys } from './keys.ts';

/**
 * Sealed content too large for its item, kept in chunk items of the task's partition
 * (docs/data-model.md, "Large content"). A DynamoDB item holds at most 400 KB; a task row
 * holds its sealed status message, artifacts and history, and a journal view or event the first
 * two. When they do not fit, a blob is stored as chunk items and the item holds a reference:
 *
 *   reference   40 bytes: u8 0xC5 (a sealed blob starts with its version, 1; a packed header
 *               reference with 0x00), u8 format 1, u32 blob length, u16 chunk count,
 *               32 bytes SHA-256 of the blob (integers big-endian)
 *   chunk       `CHUNK#<sha256, base64url>#<index, 3 digits>`: `data` (binary), `expiresAt`
 *
 * The blob is sealed before it is cut (AES-GCM with the AAD `{taskId, field}`), so its chunks
 * re-assembled open only as that task's field: a chunk moved, swapped or edited fails the hash or
 * the tag. Chunks are immutable and named by their blob's hash, so every writer derives the same
 * reference from the same blob, and a journal item refers to the chunks its task row's write
 * stored. Pure: no I/O.
 */

export type ContentField = 'statusMessage' | 'artifacts' | 'history';

/** The sealed content an item may hold inline, all fields together; the rest of 400 KB is headroom. */
export const inlineContentBytes = 256 * 1024;
/** Bytes of sealed blob per chunk item (with its keys and `expiresAt`, well under 400 KB). */
export const chunkBytes = 350_000;
/** A transaction carries at most 4 MB; the chunks of one write stay under this. */
export const transactionContentBytes = 3_900_000;
/** And at most 100 items. */
export const transactionItems = 100;

const REFERENCE_MARKER = 0xc5;
const REFERENCE_FORMAT = 1;
const REFERENCE_BYTES = 40;
const HASH_OFFSET = 8;

interface ChunkReference {
  readonly hash: string;
  readonly length: number;
  readonly count: number;
}

export const isChunkReference = (blob: Uint8Array | undefined): boolean =>
  blob !== undefined &&
  blob.length === REFERENCE_BYTES &&
  blob[0] === REFERENCE_MARKER &&
  blob[1] === REFERENCE_FORMAT;

export const readReference = (blob: Uint8Array): ChunkReference => {
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  return {
    length: view.getUint32(2),
    count: view.getUint16(6),
    hash: Buffer.from(blob.subarray(HASH_OFFSET)).toString('base64url'),
  };
};

const hashOf = (blob: Uint8Array): Buffer => createHash('sha256').update(blob).digest();

/**
 * References already computed, per blob: the row's write and the write-through's event and view
 * refer to the same sealed blobs, which are never changed in place, so each is hashed once.
 */
const references = new WeakMap<Uint8Array, Uint8Array>();

/** The reference to a blob's chunks; a reference is its own. */
export const referenceOf = (blob: Uint8Array): Uint8Array => {
  if (isChunkReference(blob)) return blob;
  const known = references.get(blob);
  if (known !== undefined) return known;
  const reference = new Uint8Array(REFERENCE_BYTES);
  const view = new DataView(reference.buffer);
  reference[0] = REFERENCE_MARKER;
  reference[1] = REFERENCE_FORMAT;
  view.setUint32(2, blob.length);
  view.setUint16(6, Math.ceil(blob.length / chunkBytes));
  reference.set(hashOf(blob), HASH_OFFSET);
  references.set(blob, reference);
  return reference;
};

/** The whole blob is the one its reference names (length and hash). */
export const matchesReference = (blob: Uint8Array, reference: ChunkReference): boolean =>
  blob.length === reference.length && hashOf(blob).toString('base64url') === reference.hash;

/** The sort keys of a reference's chunks, in order. */
export const chunkSortKeys = (reference: ChunkReference): string[] =>
  Array.from({ length: reference.count }, (_, index) => chunkSortKey(reference.hash, index));

/** A blob cut into its chunks' data, in order. */
export const cutIntoChunks = (blob: Uint8Array): Uint8Array[] =>
  Array.from({ length: Math.ceil(blob.length / chunkBytes) }, (_, index) =>
    blob.subarray(index * chunkBytes, (index + 1) * chunkBytes),
  );

type ContentBlobs = Partial<Record<ContentField, Uint8Array>>;

/** A blob smaller than this stays inline: a chunk item of its own would save its row little. */
export const minChunkedBytes = 16 * 1024;

/**
 * Which fields of an item are stored as chunks: the history first (no journal item carries it),
 * then the artifacts, then the status message, each only if it is at least `minChunkedBytes`,
 * until what stays inline fits `inlineContentBytes`. Decided from the blobs alone, so a journal
 * item (status message and artifacts, a subset of its row's) chunks a field only where its task
 * row's write did: it never refers to chunks that were not stored.
 */
export const chunkedFields = (blobs: ContentBlobs): Set<ContentField> => {
  const size = (field: ContentField): number => blobs[field]?.length ?? 0;
  const chunked = new Set<ContentField>();
  let inline = size('statusMessage') + size('artifacts') + size('history');
  for (const field of ['history', 'artifacts', 'statusMessage'] as const) {
    if (inline <= inlineContentBytes) break;
    if (size(field) < minChunkedBytes) continue;
    chunked.add(field);
    inline -= size(field);
  }
  return chunked;
};

/**
 * The blobs as an item stores them: a chunked field as its reference, the others as they are
 * (a reference stays one: its chunks are stored already).
 */
export const storedBlobs = <T extends ContentBlobs>(blobs: T): T => {
  const chunked = chunkedFields(blobs);
  const stored: ContentBlobs = { ...blobs };
  for (const field of chunked) stored[field] = referenceOf(blobs[field] as Uint8Array);
  return stored as T;
};

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const contentOf = (task: StoredTask): ContentBlobs =>
  Object.fromEntries(
    Object.entries({
      statusMessage: task.sealedStatusMessage,
      artifacts: task.sealedArtifacts,
      history: task.sealedHistory,
    }).filter(([, blob]) => blob !== undefined),
  );

/** A task write with its content as stored, and the chunk writes that go with it in one transaction. */
export interface ChunkedTaskWrite {
  readonly task: StoredTask;
  readonly writes: readonly TransactItem[];
  /** The bytes of chunk data the writes carry (against the transaction's 4 MB). */
  readonly bytes: number;
}

/**
 * A task write's chunk writes (docs/data-model.md, "Large content"): the chunks of each blob it stores as a
 * reference for the first time; for a reference it keeps, the chunks' `expiresAt` moved with the task's (so
 * TTL never takes chunks a live task refers to); and the deletion of the history chunks it replaces (history
 * is never in the journal, so nothing else refers to them: a scrubbed history leaves nothing behind).
 * `before` is the row as its writer read it. Nothing to write for a task whose content fits its row, as
 * before. Pure.
 */
export const chunkTaskWrite = (
  task: StoredTask,
  before: StoredTask | undefined,
  tableName: string,
): ChunkedTaskWrite => {
  const content = contentOf(task);
  const stored = storedBlobs(content);
  const storedBefore = before === undefined ? {} : storedBlobs(contentOf(before));
  const chunkKey = (sk: string) => keys.chunk(task.taskId, sk);
  const writes: TransactItem[] = [];
  let bytes = 0;
  for (const field of ['statusMessage', 'artifacts', 'history'] as const) {
    const reference = stored[field];
    if (reference === undefined || !isChunkReference(reference)) continue;
    const chunks = readReference(reference);
    const blob = content[field] as Uint8Array;
    if (!isChunkReference(blob) && !sameBytes(reference, storedBefore[field])) {
      for (const [index, data] of cutIntoChunks(blob).entries()) {
        writes.push({
          Put: {
            TableName: tableName,
            Item: { ...chunkKey(chunkSortKey(chunks.hash, index)), data, expiresAt: task.expiresAt },
          },
        });
      }
      bytes += blob.length;
    } else if (task.expiresAt > (before?.expiresAt ?? task.expiresAt)) {
      for (const sk of chunkSortKeys(chunks)) {
        writes.push({
          Update: {
            TableName: tableName,
            Key: chunkKey(sk),
            UpdateExpression: 'SET #expiresAt = :expiresAt',
            ExpressionAttributeNames: { '#expiresAt': 'expiresAt' },
            ExpressionAttributeValues: { ':expiresAt': task.expiresAt },
          },
        });
      }
    }
  }
  const replaced = storedBefore.history;
  if (replaced !== undefined && isChunkReference(replaced) && !sameBytes(replaced, stored.history)) {
    for (const sk of chunkSortKeys(readReference(replaced)))
      writes.push({ Delete: { TableName: tableName, Key: chunkKey(sk) } });
  }
  return {
    task: {
      ...task,
      ...(stored.statusMessage && { sealedStatusMessage: stored.statusMessage }),
      ...(stored.artifacts && { sealedArtifacts: stored.artifacts }),
      ...(stored.history && { sealedHistory: stored.history }),
    },
    writes,
    bytes,
  };
};

/** A journal item's sealed blobs as it stores them: references to the chunks its task row's write stored. */
export const withChunkReferences = <
  T extends { sealedStatusMessage?: Uint8Array; sealedArtifacts?: Uint8Array },
>(
  item: T,
): T => {
  const stored = storedBlobs({ statusMessage: item.sealedStatusMessage, artifacts: item.sealedArtifacts });
  return stored.statusMessage === item.sealedStatusMessage && stored.artifacts === item.sealedArtifacts
    ? item
    : { ...item, sealedStatusMessage: stored.statusMessage, sealedArtifacts: stored.artifacts };
};
