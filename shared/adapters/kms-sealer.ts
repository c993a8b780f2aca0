import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import {
  DecryptCommand,
  type DecryptCommandOutput,
  GenerateDataKeyCommand,
  type GenerateDataKeyCommandOutput,
} from '@aws-sdk/client-kms';
import { BoundedMap } from '../domain/bounded-map.ts';
import { SealingFailedError } from '../domain/errors.ts';
import type { SealContext, Sealer } from '../domain/ports.ts';

/**
 * Envelope encryption for stored task content (docs/data-model.md "Sealing"). Each field is sealed with
 * AES-256-GCM under a data key from KMS `GenerateDataKey`; the blob carries the encrypted data
 * key, so only a principal allowed to call KMS `Decrypt` on the key can open it.
 *
 * Blob, version 1 (integers big-endian):
 *
 *   offset 0        u8   version = 1
 *   offset 1        u8   flags: bit 0 = per-task data key (taskId is in the KMS encryption context)
 *   offset 2        u16  K = key id length
 *   offset 4        K    key id, UTF-8 (the key ARN KMS reported; tells operators which key to keep)
 *   offset 4+K      u16  E = encrypted data key length
 *   offset 6+K      E    encrypted data key (the KMS CiphertextBlob)
 *   offset 6+K+E    12   IV (random per seal)
 *   offset 18+K+E   16   GCM tag
 *   offset 34+K+E   …    ciphertext (as long as the plaintext)
 *
 * IV and tag lengths are fixed by the version, so they carry no length prefix. The DynamoDB adapter
 * stores a header that several blobs of one item share once per item (docs/data-model.md, "Sealing";
 * dynamodb/sealed-headers.ts) and re-assembles each blob byte for byte: `open` always sees whole blobs. The GCM AAD is the
 * header (bytes 0 … 6+K+E) followed by the canonical JSON of `{field, taskId}`: the context
 * binding makes a blob moved to another task or field fail, and authenticating the header means
 * an edited key id or flag fails too, even when the data key comes from the cache.
 *
 * Data keys are cached within bounds like the AWS Encryption SDK's caching CMM: one generated
 * key seals at most `maxMessages` fields for at most `maxAgeMs`; keys recovered with `Decrypt`
 * sit in a bounded LRU keyed by the encrypted data key. Key material lives in `KeyObject`s (held
 * outside the JS heap and cleared by Node when freed); the plaintext bytes KMS returns are zeroed
 * as soon as the KeyObject exists, so eviction only has to drop the reference.
 */

/** The slice of `KMSClient` the sealer uses: a real client satisfies it, and so does a small in-memory fake. */
export interface KmsDataKeyClient {
  send(command: GenerateDataKeyCommand): Promise<GenerateDataKeyCommandOutput>;
  send(command: DecryptCommand): Promise<DecryptCommandOutput>;
}

export interface DataKeyCacheOptions {
  /** How long a data key is used for sealing, and kept for opening. Default 5 minutes. */
  readonly maxAgeMs?: number;
  /** How many fields one generated data key may seal. Default 10,000. */
  readonly maxMessages?: number;
  /** How many decrypted data keys are kept for opening. Default 1,000; 0 disables the cache. */
  readonly maxEntries?: number;
}

export interface KmsSealerOptions {
  readonly kms: KmsDataKeyClient;
  /** Key id, key ARN or alias of the KMS key that wraps the data keys. */
  readonly keyId: string;
  /** Names the installation in the KMS encryption context. */
  readonly installation: string;
  readonly cache?: DataKeyCacheOptions;
  /** docs/data-model.md "Sealing" stricter mode: a fresh data key per seal, with taskId in the KMS encryption context. */
  readonly perTaskKeys?: boolean;
  /** Milliseconds since the epoch; injected so tests can age the cache. */
  readonly clock?: () => number;
}

export const SEALED_BLOB_VERSION = 1;
export const KMS_PURPOSE = 'a2a-task-content';

const FLAG_PER_TASK_KEY = 0b0000_0001;
const DATA_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_U16 = 0xffff;

const DEFAULT_CACHE = { maxAgeMs: 5 * 60 * 1000, maxMessages: 10_000, maxEntries: 1_000 } as const;

/** The AAD part that binds a blob to its place; keys in sorted order so it is canonical. */
export const canonicalizeSealContext = (context: SealContext): string =>
  JSON.stringify({ field: context.field, taskId: context.taskId });

interface SealingKey {
  readonly key: KeyObject;
  readonly keyId: string;
  readonly encryptedKey: Uint8Array;
  readonly createdAt: number;
  uses: number;
}

interface SealedBlob {
  readonly flags: number;
  readonly keyId: string;
  readonly encryptedKey: Uint8Array;
  readonly header: Uint8Array;
  readonly iv: Uint8Array;
  readonly tag: Uint8Array;
  readonly ciphertext: Uint8Array;
}

type SealOperation = 'seal' | 'open';

/** A failed step inside the sealer; `seal`/`open` attach the caller's task and field. */
const failStep = (message: string, cause?: unknown): SealingFailedError =>
  new SealingFailedError(message, {}, { cause });

/**
 * Every rejection of `seal`/`open` is a SealingFailedError naming the caller's context, also when
 * the failing KMS call was shared with concurrent callers (single flight) for another task.
 */
const toSealingFailure = (
  error: unknown,
  operation: SealOperation,
  context: SealContext,
): SealingFailedError => {
  const details = { operation, taskId: context.taskId, field: context.field };
  return error instanceof SealingFailedError
    ? new SealingFailedError(error.message, { ...error.details, ...details }, { cause: error.cause })
    : new SealingFailedError('Sealing failed', details, { cause: error });
};

const encodeHeader = (flags: number, keyId: string, encryptedKey: Uint8Array): Buffer => {
  const id = Buffer.from(keyId, 'utf8');
  if (id.length > MAX_U16 || encryptedKey.length > MAX_U16) {
    throw new RangeError('Key id or encrypted data key too long for the blob format');
  }
  const header = Buffer.alloc(6 + id.length + encryptedKey.length);
  header.writeUInt8(SEALED_BLOB_VERSION, 0);
  header.writeUInt8(flags, 1);
  header.writeUInt16BE(id.length, 2);
  id.copy(header, 4);
  header.writeUInt16BE(encryptedKey.length, 4 + id.length);
  header.set(encryptedKey, 6 + id.length);
  return header;
};

/** Returns undefined for anything that is not a well-formed version 1 blob. */
const decodeBlob = (blob: Uint8Array): SealedBlob | undefined => {
  const bytes = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  if (bytes.length < 6 || bytes.readUInt8(0) !== SEALED_BLOB_VERSION) return undefined;
  const flags = bytes.readUInt8(1);
  if ((flags & ~FLAG_PER_TASK_KEY) !== 0) return undefined;
  const idLength = bytes.readUInt16BE(2);
  if (bytes.length < 6 + idLength) return undefined;
  const keyLength = bytes.readUInt16BE(4 + idLength);
  const ivStart = 6 + idLength + keyLength;
  if (keyLength === 0 || bytes.length < ivStart + IV_BYTES + TAG_BYTES) return undefined;
  return {
    flags,
    keyId: bytes.subarray(4, 4 + idLength).toString('utf8'),
    encryptedKey: bytes.subarray(6 + idLength, ivStart),
    header: bytes.subarray(0, ivStart),
    iv: bytes.subarray(ivStart, ivStart + IV_BYTES),
    tag: bytes.subarray(ivStart + IV_BYTES, ivStart + IV_BYTES + TAG_BYTES),
    ciphertext: bytes.subarray(ivStart + IV_BYTES + TAG_BYTES),
  };
};

const buildAad = (header: Uint8Array, context: SealContext): Buffer =>
  Buffer.concat([header, Buffer.from(canonicalizeSealContext(context), 'utf8')]);

const encryptField = (
  sealingKey: SealingKey,
  flags: number,
  plaintext: Uint8Array,
  context: SealContext,
): Uint8Array => {
  const header = encodeHeader(flags, sealingKey.keyId, sealingKey.encryptedKey);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealingKey.key, iv);
  cipher.setAAD(buildAad(header, context));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([header, iv, cipher.getAuthTag(), ciphertext]);
};

/** Rejects unless the tag verifies; the partial plaintext of a failed blob is zeroed, never returned. */
const decryptSealedField = (key: KeyObject, blob: SealedBlob, context: SealContext): Uint8Array => {
  const decipher = createDecipheriv('aes-256-gcm', key, blob.iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(buildAad(blob.header, context));
  decipher.setAuthTag(blob.tag);
  const plaintext = decipher.update(blob.ciphertext);
  try {
    return Buffer.concat([plaintext, decipher.final()]);
  } catch (error: unknown) {
    plaintext.fill(0);
    throw failStep('Sealed blob failed to authenticate', error);
  }
};

/** Copies the KMS plaintext into a KeyObject and zeroes the original, so no loose copy stays in the heap. */
const importDataKey = (plaintext: Uint8Array | undefined): KeyObject => {
  if (plaintext === undefined) throw new Error('KMS returned no plaintext data key');
  try {
    if (plaintext.length !== DATA_KEY_BYTES)
      throw new Error(`KMS returned a ${plaintext.length}-byte data key`);
    return createSecretKey(plaintext);
  } finally {
    plaintext.fill(0);
  }
};

const toCacheId = (encryptedKey: Uint8Array): string =>
  Buffer.from(encryptedKey.buffer, encryptedKey.byteOffset, encryptedKey.byteLength).toString('base64');

const requireInteger = (name: string, value: number, min: number): number => {
  if (!Number.isInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}`);
  return value;
};

interface OpenedKey {
  readonly key: KeyObject;
  readonly createdAt: number;
}

/** Least-recently-used map of decrypted data keys: a read makes its key the newest. */
class OpenedKeyCache {
  private readonly entries: BoundedMap<string, OpenedKey>;

  constructor(
    maxEntries: number,
    private readonly maxAgeMs: number,
  ) {
    this.entries = new BoundedMap(maxEntries);
  }

  get(id: string, now: number): KeyObject | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (now - entry.createdAt >= this.maxAgeMs) {
      this.entries.delete(id);
      return undefined;
    }
    this.entries.set(id, entry);
    return entry.key;
  }

  set(id: string, entry: OpenedKey): void {
    this.entries.set(id, entry);
  }
}

export class KmsSealer implements Sealer {
  private readonly kms: KmsDataKeyClient;
  private readonly keyId: string;
  private readonly installation: string;
  private readonly perTaskKeys: boolean;
  private readonly clock: () => number;
  private readonly maxAgeMs: number;
  private readonly maxMessages: number;
  private readonly openedKeys: OpenedKeyCache;
  private sealingKey: SealingKey | undefined;
  /** Single flight: seals that find no usable key wait for one GenerateDataKey together. */
  private pendingSealingKey: Promise<void> | undefined;
  private readonly pendingOpens = new Map<string, Promise<KeyObject>>();

  constructor(options: KmsSealerOptions) {
    if (options.keyId === '' || options.installation === '') {
      throw new RangeError('KmsSealer needs a keyId and an installation');
    }
    this.kms = options.kms;
    this.keyId = options.keyId;
    this.installation = options.installation;
    this.perTaskKeys = options.perTaskKeys ?? false;
    this.clock = options.clock ?? Date.now;
    const cache = { ...DEFAULT_CACHE, ...options.cache };
    this.maxAgeMs = requireInteger('cache.maxAgeMs', cache.maxAgeMs, 1);
    this.maxMessages = requireInteger('cache.maxMessages', cache.maxMessages, 1);
    this.openedKeys = new OpenedKeyCache(
      requireInteger('cache.maxEntries', cache.maxEntries, 0),
      this.maxAgeMs,
    );
  }

  async seal(plaintext: Uint8Array, context: SealContext): Promise<Uint8Array> {
    try {
      const flags = this.perTaskKeys ? FLAG_PER_TASK_KEY : 0;
      const sealingKey = this.perTaskKeys
        ? await this.generateDataKey(this.buildKmsContext(flags, context))
        : await this.acquireSealingKey();
      return encryptField(sealingKey, flags, plaintext, context);
    } catch (error: unknown) {
      throw toSealingFailure(error, 'seal', context);
    }
  }

  async open(blob: Uint8Array, context: SealContext): Promise<Uint8Array> {
    try {
      const sealed = decodeBlob(blob);
      if (sealed === undefined) throw failStep('Sealed blob is malformed');
      const key = this.lookUpOpenedKey(sealed) ?? (await this.recoverDataKey(sealed, context));
      return decryptSealedField(key, sealed, context);
    } catch (error: unknown) {
      throw toSealingFailure(error, 'open', context);
    }
  }

  private buildKmsContext(flags: number, context: SealContext): Record<string, string> {
    const base = { installation: this.installation, purpose: KMS_PURPOSE };
    return (flags & FLAG_PER_TASK_KEY) === 0 ? base : { ...base, taskId: context.taskId };
  }

  private isUsable(sealingKey: SealingKey): boolean {
    return sealingKey.uses < this.maxMessages && this.clock() - sealingKey.createdAt < this.maxAgeMs;
  }

  private async acquireSealingKey(): Promise<SealingKey> {
    for (;;) {
      const current = this.sealingKey;
      if (current !== undefined && this.isUsable(current)) {
        current.uses += 1;
        return current;
      }
      this.pendingSealingKey ??= this.refreshSealingKey();
      await this.pendingSealingKey;
    }
  }

  private async refreshSealingKey(): Promise<void> {
    try {
      this.sealingKey = undefined;
      const fresh = await this.generateDataKey({ installation: this.installation, purpose: KMS_PURPOSE });
      this.sealingKey = fresh;
      // The sealer's own blobs open without a Decrypt.
      this.openedKeys.set(toCacheId(fresh.encryptedKey), { key: fresh.key, createdAt: fresh.createdAt });
    } finally {
      this.pendingSealingKey = undefined;
    }
  }

  private async generateDataKey(kmsContext: Record<string, string>): Promise<SealingKey> {
    let output: GenerateDataKeyCommandOutput;
    try {
      output = await this.kms.send(
        new GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: 'AES_256', EncryptionContext: kmsContext }),
      );
    } catch (error: unknown) {
      throw failStep('KMS GenerateDataKey failed', error);
    }
    try {
      const key = importDataKey(output.Plaintext);
      const encryptedKey = output.CiphertextBlob;
      if (encryptedKey === undefined || encryptedKey.length === 0 || encryptedKey.length > MAX_U16) {
        throw new Error('KMS returned no usable encrypted data key');
      }
      return { key, keyId: output.KeyId ?? this.keyId, encryptedKey, createdAt: this.clock(), uses: 0 };
    } catch (error: unknown) {
      throw failStep('KMS GenerateDataKey returned an unusable data key', error);
    }
  }

  private lookUpOpenedKey(sealed: SealedBlob): KeyObject | undefined {
    // Per-task blobs always go to KMS, so every read of a task's content is a KMS call bound to that task.
    if ((sealed.flags & FLAG_PER_TASK_KEY) !== 0) return undefined;
    return this.openedKeys.get(toCacheId(sealed.encryptedKey), this.clock());
  }

  private recoverDataKey(sealed: SealedBlob, context: SealContext): Promise<KeyObject> {
    if ((sealed.flags & FLAG_PER_TASK_KEY) !== 0) return this.decryptDataKey(sealed, context);
    const id = toCacheId(sealed.encryptedKey);
    const pending = this.pendingOpens.get(id);
    if (pending !== undefined) return pending;
    const recovery = this.decryptDataKey(sealed, context)
      .then((key) => {
        this.openedKeys.set(id, { key, createdAt: this.clock() });
        return key;
      })
      .finally(() => this.pendingOpens.delete(id));
    this.pendingOpens.set(id, recovery);
    return recovery;
  }

  /** Asks for the configured key, not the one the blob names: a planted blob under another key fails closed. */
  private async decryptDataKey(sealed: SealedBlob, context: SealContext): Promise<KeyObject> {
    let output: DecryptCommandOutput;
    try {
      output = await this.kms.send(
        new DecryptCommand({
          CiphertextBlob: sealed.encryptedKey,
          KeyId: this.keyId,
          EncryptionContext: this.buildKmsContext(sealed.flags, context),
        }),
      );
    } catch (error: unknown) {
      throw failStep('KMS Decrypt failed', error);
    }
    try {
      return importDataKey(output.Plaintext);
    } catch (error: unknown) {
      throw failStep('KMS Decrypt returned an unusable data key', error);
    }
  }
}
