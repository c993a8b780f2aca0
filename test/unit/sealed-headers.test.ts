import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { itemSize } from '../../bench/lib/meter.ts';
import { fromTaskItem, taskItemSchema, toTaskItem } from '../../shared/adapters/dynamodb/entities.ts';
import {
  HEADERS_ATTRIBUTE,
  packSealedHeaders,
  sealedHeaderLength,
  unpackSealedHeaders,
} from '../../shared/adapters/dynamodb/sealed-headers.ts';
import { parseTaskImage } from '../../shared/adapters/dynamodb/stream-images.ts';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import type { StoredTask } from '../../shared/domain/projection.ts';
import { ENCRYPTED_KEY_BYTES, FakeKms, KEY_ARN } from '../support/fake-kms.ts';

const kms = new FakeKms();
const newSealer = () => new KmsSealer({ kms, keyId: KEY_ARN, installation: 'unit-test' });
/** Two Lambda instances: each caches its own data key, so their blobs carry different headers. */
const sealerA = newSealer();
const sealerB = newSealer();
/** A reader with an empty cache, so every open goes through KMS Decrypt with the header's encrypted key. */
const reader = newSealer();

const TASK = 'task-1';
const seal = (sealer: KmsSealer, field: string, text: string, taskId = TASK) =>
  sealer.seal(new TextEncoder().encode(text), { taskId, field });
const open = async (blob: unknown, field: string, taskId = TASK) =>
  new TextDecoder().decode(await reader.open(blob as Uint8Array, { taskId, field }));

const bytes = (value: unknown): string => Buffer.from(value as Uint8Array).toString('hex');
/** Each value's bytes as hex, so items compare byte for byte whatever the Uint8Array subclass. */
const asHex = (item: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(item).map(([name, value]) => [name, value instanceof Uint8Array ? bytes(value) : value]),
  );

describe('sealed blob headers stored once per item (decision 0039)', () => {
  it('reads the header length of a KmsSealer blob as the format defines it (6 + K + E)', async () => {
    const blob = await seal(sealerA, 'statusMessage', 'hello');
    expect(sealedHeaderLength(blob)).toBe(6 + Buffer.byteLength(KEY_ARN) + ENCRYPTED_KEY_BYTES);
    expect(blob.length).toBe(6 + Buffer.byteLength(KEY_ARN) + ENCRYPTED_KEY_BYTES + 12 + 16 + 5);
  });

  it('round-trips items of 0, 1, 2 and 3 blobs byte for byte; only shared headers are packed', async () => {
    const status = await seal(sealerA, 'statusMessage', 'done');
    const artifacts = await seal(sealerA, 'artifacts', '[{"parts":[]}]');
    const history = await seal(sealerA, 'history', '[{"role":"user"}]');
    const header = status.subarray(0, sealedHeaderLength(status));
    const cases: Record<string, unknown>[] = [
      { pk: 'TASK#1', revision: 1 },
      { pk: 'TASK#1', statusMessage: status },
      { pk: 'TASK#1', statusMessage: status, artifacts },
      { pk: 'TASK#1', statusMessage: status, artifacts, history },
    ];
    for (const item of cases) {
      const blobs = Object.values(item).filter((value) => value instanceof Uint8Array).length;
      const packed = packSealedHeaders(item);
      if (blobs < 2) {
        // Nothing shared: stored exactly as before, no list attribute.
        expect(packed).toBe(item);
      } else {
        expect(packed[HEADERS_ATTRIBUTE]?.map(bytes)).toEqual([bytes(header)]);
        for (const name of ['statusMessage', 'artifacts', 'history'].filter((name) => name in item)) {
          const ref = packed[name] as Uint8Array;
          expect([...ref.subarray(0, 2)]).toEqual([0, 0]);
          expect(bytes(ref.subarray(2))).toBe(bytes((item[name] as Uint8Array).subarray(header.length)));
        }
      }
      expect(asHex(unpackSealedHeaders(packed))).toEqual(asHex(item));
    }
  });

  it('keeps distinct headers apart: blobs sealed under different data keys in one item', async () => {
    const item = {
      statusMessage: await seal(sealerA, 'statusMessage', 'from A'),
      artifacts: await seal(sealerA, 'artifacts', 'artifacts from A'),
      history: await seal(sealerB, 'history', 'history from B'),
      token: await seal(sealerB, 'token', 'token from B'),
      credentials: await seal(newSealer(), 'credentials', 'alone'),
    };
    const packed = packSealedHeaders(item);
    expect(packed[HEADERS_ATTRIBUTE]).toHaveLength(2);
    expect([...(packed.statusMessage as Uint8Array).subarray(0, 2)]).toEqual([0, 0]);
    expect([...(packed.artifacts as Uint8Array).subarray(0, 2)]).toEqual([0, 0]);
    expect([...(packed.history as Uint8Array).subarray(0, 2)]).toEqual([0, 1]);
    expect([...(packed.token as Uint8Array).subarray(0, 2)]).toEqual([0, 1]);
    // A header no other blob shares stays in its blob.
    expect(bytes(packed.credentials)).toBe(bytes(item.credentials));
    const unpacked = unpackSealedHeaders(packed);
    expect(asHex(unpacked)).toEqual(asHex(item));
    expect(await open(unpacked.statusMessage, 'statusMessage')).toBe('from A');
    expect(await open(unpacked.history, 'history')).toBe('history from B');
    expect(await open(unpacked.token, 'token')).toBe('token from B');
    expect(await open(unpacked.credentials, 'credentials')).toBe('alone');
  });

  it('opens what it unpacks through the real KmsSealer, and a blob moved to another field or task still fails', async () => {
    const item = {
      statusMessage: await seal(sealerA, 'statusMessage', 'the answer'),
      artifacts: await seal(sealerA, 'artifacts', 'the artifacts'),
    };
    const unpacked = unpackSealedHeaders(packSealedHeaders(item));
    expect(await open(unpacked.statusMessage, 'statusMessage')).toBe('the answer');
    expect(await open(unpacked.artifacts, 'artifacts')).toBe('the artifacts');
    await expect(open(unpacked.statusMessage, 'artifacts')).rejects.toThrow(/authenticate/);
    await expect(open(unpacked.artifacts, 'artifacts', 'task-2')).rejects.toThrow(/authenticate/);
    // A packed reference moved into an item whose list holds another header re-assembles to a blob
    // under the wrong data key: it fails to open rather than reading.
    const other = packSealedHeaders({
      statusMessage: await seal(sealerB, 'statusMessage', 'other', 'task-2'),
      artifacts: await seal(sealerB, 'artifacts', 'other', 'task-2'),
    });
    const planted = unpackSealedHeaders({ ...other, artifacts: packSealedHeaders(item).artifacts });
    await expect(open(planted.artifacts, 'artifacts', 'task-2')).rejects.toThrow();
  });

  it('would catch an unpack that returned a different blob: one flipped byte of the stored header fails to open', async () => {
    const packed = packSealedHeaders({
      statusMessage: await seal(sealerA, 'statusMessage', 'x'),
      artifacts: await seal(sealerA, 'artifacts', 'y'),
    });
    const header = Uint8Array.from(packed[HEADERS_ATTRIBUTE]?.[0] ?? []);
    header[1] = 0b1; // the per-task flag: authenticated by the AAD
    const tampered = unpackSealedHeaders({ ...packed, [HEADERS_ATTRIBUTE]: [header] });
    await expect(open(tampered.statusMessage, 'statusMessage')).rejects.toThrow();
  });

  it('reads legacy items (written before this change) unchanged, with no migration', async () => {
    const legacy = {
      pk: 'TASK#1',
      statusMessage: await seal(sealerA, 'statusMessage', 'old'),
      artifacts: await seal(sealerA, 'artifacts', 'old artifacts'),
    };
    expect(unpackSealedHeaders(legacy)).toBe(legacy);
    expect(await open(unpackSealedHeaders(legacy).artifacts, 'artifacts')).toBe('old artifacts');
  });

  it('leaves blobs without a recognisable header as they are, and items it cannot tell apart unpacked', async () => {
    const shared = {
      statusMessage: await seal(sealerA, 'statusMessage', 's'),
      artifacts: await seal(sealerA, 'artifacts', 'a'),
    };
    const fake = await new FakeSealer().seal(new Uint8Array([1, 2]), { taskId: TASK, field: 'history' });
    const malformed = [
      fake, // another format (0xfa marker)
      Uint8Array.of(1, 0, 0), // too short for a header
      Uint8Array.of(1, 0, 0, 200, 1, 2, 3), // key id longer than the blob
      Uint8Array.from([...shared.statusMessage.subarray(0, sealedHeaderLength(shared.statusMessage)), 1, 2]), // no IV/tag
      Uint8Array.of(2, ...shared.statusMessage.subarray(1)), // another version
      new Uint8Array(0),
    ];
    for (const history of malformed) {
      const item = { ...shared, history };
      const packed = packSealedHeaders(item);
      expect(bytes(packed.history)).toBe(bytes(history));
      expect(packed[HEADERS_ATTRIBUTE]).toHaveLength(1);
      expect(asHex(unpackSealedHeaders(packed))).toEqual(asHex(item));
    }
    // A foreign blob that starts like a reference: the whole item is stored as it is, so a read cannot mistake it.
    const ambiguous = { ...shared, history: Uint8Array.of(0, 0, 9, 9) };
    expect(packSealedHeaders(ambiguous)).toBe(ambiguous);
    // A reference to no stored header is left as it is; the sealer rejects it as malformed.
    const dangling = { [HEADERS_ATTRIBUTE]: [Uint8Array.of(1)], statusMessage: Uint8Array.of(0, 5, 1, 2) };
    const read = unpackSealedHeaders(dangling);
    expect(bytes(read.statusMessage)).toBe('00050102');
    await expect(open(read.statusMessage, 'statusMessage')).rejects.toThrow(/malformed/);
  });

  it('round-trips any mix of shared, distinct and foreign blobs byte for byte (property)', async () => {
    const headers = await Promise.all([sealerA, sealerB, newSealer()].map((s) => seal(s, 'f', '')));
    const blobOf = fc.oneof(
      fc
        .tuple(fc.constantFrom(...headers), fc.uint8Array({ minLength: 28, maxLength: 60 }))
        .map(([sealed, rest]) =>
          Uint8Array.from([...sealed.subarray(0, sealedHeaderLength(sealed)), ...rest]),
        ),
      fc.uint8Array({ maxLength: 40 }),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e'), blobOf), (blobs) => {
        const item = { pk: 'TASK#p', ...blobs };
        expect(asHex(unpackSealedHeaders(packSealedHeaders(item)))).toEqual(asHex(item));
      }),
    );
  });

  it('stores a completed task item smaller, and reads it back through the schema and a stream image', async () => {
    const task: StoredTask = {
      taskId: TASK,
      contextId: 'ctx',
      owner: { tenant: 't', principal: 'p' },
      profileId: 'echo',
      state: 'TASK_STATE_COMPLETED',
      revision: 3,
      currentRunId: 'run-1',
      statusTimestamp: '2026-01-01T00:00:00.000Z',
      createdAt: '2026-01-01T00:00:00.000Z',
      expiresAt: 1,
      sealedStatusMessage: await seal(sealerA, 'statusMessage', 'done'),
      sealedArtifacts: await seal(sealerA, 'artifacts', 'artifacts'),
      sealedHistory: await seal(sealerA, 'history', 'history'),
    };
    const item = toTaskItem(task);
    const header = sealedHeaderLength(task.sealedStatusMessage as Uint8Array) ?? 0;
    // Three headers become one list entry, each blob keeps a 2-byte reference: 2H − 6 − (name + list overhead).
    expect(item[HEADERS_ATTRIBUTE]).toHaveLength(1);
    const unpacked = toTaskItemUnpacked(task);
    const listOverhead = HEADERS_ATTRIBUTE.length + 3 + 1;
    expect(itemSize(marshall(unpacked)) - itemSize(marshall(item))).toBe(2 * header - 3 * 2 - listOverhead);

    const back = fromTaskItem(taskItemSchema.parse(unmarshall(marshall(item))));
    expect(await open(back.sealedStatusMessage, 'statusMessage')).toBe('done');
    expect(await open(back.sealedHistory, 'history')).toBe('history');
    // Lambda stream events carry binary attributes (also inside lists) as base64 strings.
    const image = base64Binaries(marshall(item));
    const fromStream = parseTaskImage(image);
    expect(bytes(fromStream?.sealedArtifacts)).toBe(bytes(task.sealedArtifacts));
    expect(await open(fromStream?.sealedArtifacts, 'artifacts')).toBe('artifacts');
  });
});

/** The task item as it was stored before decision 0039 (every blob whole). */
const toTaskItemUnpacked = (task: StoredTask) => unpackSealedHeaders(toTaskItem(task));

const base64Binaries = (value: unknown): Record<string, unknown> =>
  JSON.parse(
    JSON.stringify(value, function (this: Record<string, unknown>, key: string, inner: unknown) {
      const raw = this[key];
      return raw instanceof Uint8Array ? Buffer.from(raw).toString('base64') : inner;
    }),
  );
