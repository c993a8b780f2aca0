import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import {
  type DecryptCommand,
  type DecryptCommandOutput,
  GenerateDataKeyCommand,
  type GenerateDataKeyCommandOutput,
  InvalidCiphertextException,
  NotFoundException,
} from '@aws-sdk/client-kms';
import type { KmsDataKeyClient } from '../../shared/adapters/kms-sealer.ts';

export const KEY_ARN = 'arn:aws:kms:us-east-1:000000000000:key/11111111-2222-3333-4444-555555555555';
export const KEY_ALIAS = 'alias/a2a-test';
/** The size of the encrypted data keys it returns: IV 12 + tag 16 + key 32 (the local KMS endpoint's are 98 B, AWS's ≈ 184 B). */
export const ENCRYPTED_KEY_BYTES = 12 + 16 + 32;

type EncryptionContext = Record<string, string>;

const canonicalizeKmsContext = (context: EncryptionContext | undefined): Buffer =>
  Buffer.from(JSON.stringify(Object.entries(context ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));

/**
 * A fake KMS, not a mock: it really wraps data keys with AES-256-GCM under an in-memory master
 * key and enforces the key id and the encryption context the way KMS does (NotFoundException,
 * InvalidCiphertextException). So the tests below observe what the sealer actually does with
 * KMS — a wrong context fails, a tampered encrypted key fails — rather than replaying expected
 * calls. The call counters only measure cost; correctness is asserted on the bytes.
 */
export class FakeKms implements KmsDataKeyClient {
  readonly calls = { GenerateDataKey: 0, Decrypt: 0 };
  readonly generateContexts: EncryptionContext[] = [];
  readonly decryptContexts: EncryptionContext[] = [];
  /** Every plaintext data key handed out, to check the sealer zeroes them. */
  readonly issuedPlaintexts: Uint8Array[] = [];
  /** When set, every call fails with it, as during a KMS outage. */
  failure: Error | undefined;
  private readonly masterKey = randomBytes(32);
  private gate: Promise<void> | undefined;

  /** Holds every response until the returned function is called, so calls can overlap. */
  hold(): () => void {
    let release = (): void => {};
    this.gate = new Promise((resolve) => {
      release = () => {
        this.gate = undefined;
        resolve();
      };
    });
    return release;
  }

  send(command: GenerateDataKeyCommand): Promise<GenerateDataKeyCommandOutput>;
  send(command: DecryptCommand): Promise<DecryptCommandOutput>;
  async send(
    command: GenerateDataKeyCommand | DecryptCommand,
  ): Promise<GenerateDataKeyCommandOutput | DecryptCommandOutput> {
    if (command instanceof GenerateDataKeyCommand) {
      this.calls.GenerateDataKey += 1;
      this.generateContexts.push({ ...command.input.EncryptionContext });
    } else {
      this.calls.Decrypt += 1;
      this.decryptContexts.push({ ...command.input.EncryptionContext });
    }
    await this.gate;
    if (this.failure !== undefined) throw this.failure;
    return command instanceof GenerateDataKeyCommand
      ? this.generateDataKey(command.input.KeyId, command.input.EncryptionContext)
      : this.decrypt(command.input.KeyId, command.input.CiphertextBlob, command.input.EncryptionContext);
  }

  private requireKnownKey(keyId: string | undefined): void {
    if (keyId !== KEY_ARN && keyId !== KEY_ALIAS) {
      throw new NotFoundException({ message: `Key '${keyId}' does not exist`, $metadata: {} });
    }
  }

  private generateDataKey(keyId: string | undefined, context: EncryptionContext | undefined) {
    this.requireKnownKey(keyId);
    const dataKey = randomBytes(32);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.masterKey, iv);
    cipher.setAAD(canonicalizeKmsContext(context));
    const wrapped = Buffer.concat([cipher.update(dataKey), cipher.final()]);
    const plaintext = new Uint8Array(dataKey);
    this.issuedPlaintexts.push(plaintext);
    return {
      KeyId: KEY_ARN,
      Plaintext: plaintext,
      CiphertextBlob: new Uint8Array(Buffer.concat([iv, cipher.getAuthTag(), wrapped])),
      $metadata: {},
    };
  }

  private decrypt(
    keyId: string | undefined,
    blob: Uint8Array | undefined,
    context: EncryptionContext | undefined,
  ) {
    this.requireKnownKey(keyId);
    const bytes = Buffer.from(blob ?? []);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.masterKey, bytes.subarray(0, 12));
      decipher.setAAD(canonicalizeKmsContext(context));
      decipher.setAuthTag(bytes.subarray(12, 28));
      const plaintext = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
      return { KeyId: KEY_ARN, Plaintext: new Uint8Array(plaintext), $metadata: {} };
    } catch {
      throw new InvalidCiphertextException({ message: 'The ciphertext is invalid.', $metadata: {} });
    }
  }
}
