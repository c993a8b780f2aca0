import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createSecretKey,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { SealingFailedError } from '../domain/errors.ts';
import type { SealContext, Sealer } from '../domain/ports.ts';
import { canonicalizeSealContext } from './kms-sealer.ts';

/**
 * A Sealer for unit tests of other modules: no KMS, but real AES-256-GCM under a fixed
 * in-memory key with the same `{taskId, field}` AAD binding as KmsSealer, so "a moved blob fails
 * to open" holds with the fake too, and a test cannot read sealed content by accident.
 *
 * Blob: marker byte 0xfa, 12-byte IV, 16-byte GCM tag, ciphertext. The marker keeps fake blobs
 * apart from KmsSealer blobs (version 1) and is authenticated with the context.
 */

const FAKE_BLOB_MARKER = 0xfa;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Fixed, so blobs sealed by one FakeSealer open with another (a writer and a reader in one test). */
const DEFAULT_FAKE_KEY = createHash('sha256').update('a2a-serverless fake sealer key').digest();

export interface FakeSealerOptions {
  /** 32 bytes; defaults to a fixed test key. */
  readonly key?: Uint8Array;
}

const buildAad = (context: SealContext): Buffer =>
  Buffer.concat([Buffer.from([FAKE_BLOB_MARKER]), Buffer.from(canonicalizeSealContext(context), 'utf8')]);

const failSealing = (message: string, operation: 'seal' | 'open', context: SealContext, cause?: unknown) =>
  new SealingFailedError(message, { operation, taskId: context.taskId, field: context.field }, { cause });

export class FakeSealer implements Sealer {
  private readonly key: KeyObject;
  private seals = 0;
  private opens = 0;

  constructor(options: FakeSealerOptions = {}) {
    const key = options.key ?? DEFAULT_FAKE_KEY;
    if (key.length !== 32) throw new RangeError('FakeSealer key must be 32 bytes');
    this.key = createSecretKey(key);
  }

  /** Calls to `seal`, including failed ones. */
  get sealCount(): number {
    return this.seals;
  }

  /** Calls to `open`, including failed ones. */
  get openCount(): number {
    return this.opens;
  }

  async seal(plaintext: Uint8Array, context: SealContext): Promise<Uint8Array> {
    this.seals += 1;
    try {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.key, iv);
      cipher.setAAD(buildAad(context));
      const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([Buffer.from([FAKE_BLOB_MARKER]), iv, cipher.getAuthTag(), ciphertext]);
    } catch (error: unknown) {
      throw failSealing('Sealing failed', 'seal', context, error);
    }
  }

  async open(blob: Uint8Array, context: SealContext): Promise<Uint8Array> {
    this.opens += 1;
    if (blob.length < 1 + IV_BYTES + TAG_BYTES || blob[0] !== FAKE_BLOB_MARKER) {
      throw failSealing('Sealed blob is malformed', 'open', context);
    }
    const bytes = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(1, 1 + IV_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(buildAad(context));
    decipher.setAuthTag(bytes.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES));
    const plaintext = decipher.update(bytes.subarray(1 + IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([plaintext, decipher.final()]);
    } catch (error: unknown) {
      plaintext.fill(0);
      throw failSealing('Sealed blob failed to authenticate', 'open', context, error);
    }
  }
}
