import {
  CreateAliasCommand,
  CreateKeyCommand,
  DecryptCommand,
  DescribeKeyCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  GenerateRandomCommand,
  IncorrectKeyException,
  InvalidCiphertextException,
  KMSClient,
  ListAliasesCommand,
  ReEncryptCommand,
} from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KmsEmulator, startKmsEmulator } from '../../infra/local/kms-emulator.ts';
import { KmsSealer } from '../../shared/adapters/kms-sealer.ts';
import { SealingFailedError } from '../../shared/domain/errors.ts';
import type { SealContext } from '../../shared/domain/ports.ts';

/** Own emulator on an ephemeral port: this file does not depend on the global setup. */
let emulator: KmsEmulator;
let kms: KMSClient;
let keyId: string;
let keyArn: string;

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const toHex = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? []).toString('hex');

const createKey = async (description: string): Promise<{ keyId: string; arn: string }> => {
  const { KeyMetadata } = await kms.send(new CreateKeyCommand({ Description: description }));
  if (KeyMetadata?.KeyId === undefined || KeyMetadata.Arn === undefined)
    throw new Error('CreateKey returned no key');
  return { keyId: KeyMetadata.KeyId, arn: KeyMetadata.Arn };
};

const rejectionName = async (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (error instanceof Error ? error.name : String(error)),
  );

beforeAll(async () => {
  emulator = await startKmsEmulator({ port: 0 });
  kms = new KMSClient({
    endpoint: emulator.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  ({ keyId, arn: keyArn } = await createKey('a2a test key'));
});

afterAll(async () => {
  kms?.destroy();
  await emulator?.stop();
});

describe('KMS emulator through @aws-sdk/client-kms', () => {
  it('creates and describes a symmetric key', async () => {
    const { KeyMetadata } = await kms.send(new DescribeKeyCommand({ KeyId: keyArn }));

    expect(keyArn).toMatch(/^arn:aws:kms:us-east-1:000000000000:key\/[0-9a-f-]{36}$/);
    expect(KeyMetadata).toMatchObject({
      KeyId: keyId,
      Arn: keyArn,
      Description: 'a2a test key',
      KeyState: 'Enabled',
      KeySpec: 'SYMMETRIC_DEFAULT',
      KeyUsage: 'ENCRYPT_DECRYPT',
    });
    expect(KeyMetadata?.CreationDate).toBeInstanceOf(Date);
  });

  it('generates data keys that Decrypt recovers, with or without KeyId', async () => {
    const encryptionContext = { installation: 'it', purpose: 'a2a-task-content' };
    const dataKey = await kms.send(
      new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256', EncryptionContext: encryptionContext }),
    );
    const wide = await kms.send(new GenerateDataKeyCommand({ KeyId: keyId, NumberOfBytes: 64 }));

    const withoutKeyId = await kms.send(
      new DecryptCommand({ CiphertextBlob: dataKey.CiphertextBlob, EncryptionContext: encryptionContext }),
    );
    const withKeyId = await kms.send(
      new DecryptCommand({
        CiphertextBlob: dataKey.CiphertextBlob,
        KeyId: keyArn,
        EncryptionContext: encryptionContext,
      }),
    );

    expect(dataKey.KeyId).toBe(keyArn);
    expect(dataKey.Plaintext).toHaveLength(32);
    expect(wide.Plaintext).toHaveLength(64);
    expect(toHex(withoutKeyId.Plaintext)).toBe(toHex(dataKey.Plaintext));
    expect(toHex(withKeyId.Plaintext)).toBe(toHex(dataKey.Plaintext));
    expect(withoutKeyId.KeyId).toBe(keyArn);
  });

  it('encrypts and decrypts, and refuses another encryption context with InvalidCiphertextException', async () => {
    const { CiphertextBlob } = await kms.send(
      new EncryptCommand({
        KeyId: keyId,
        Plaintext: utf8('hello'),
        EncryptionContext: { taskId: 't1', b: '2' },
      }),
    );

    const decrypted = await kms.send(
      new DecryptCommand({ CiphertextBlob, EncryptionContext: { b: '2', taskId: 't1' } }),
    );
    const mismatch = kms.send(
      new DecryptCommand({ CiphertextBlob, EncryptionContext: { taskId: 't2', b: '2' } }),
    );

    expect(new TextDecoder().decode(decrypted.Plaintext)).toBe('hello');
    await expect(mismatch).rejects.toBeInstanceOf(InvalidCiphertextException);
    expect(await rejectionName(kms.send(new DecryptCommand({ CiphertextBlob })))).toBe(
      'InvalidCiphertextException',
    );
  });

  it('refuses a Decrypt whose KeyId names another key with IncorrectKeyException', async () => {
    const other = await createKey('other');
    const { CiphertextBlob } = await kms.send(new EncryptCommand({ KeyId: keyId, Plaintext: utf8('x') }));

    const attempt = kms.send(new DecryptCommand({ CiphertextBlob, KeyId: other.keyId }));

    await expect(attempt).rejects.toBeInstanceOf(IncorrectKeyException);
  });

  it('accepts an alias wherever a KeyId goes and lists it', async () => {
    await kms.send(new CreateAliasCommand({ AliasName: 'alias/a2a-it', TargetKeyId: keyId }));

    const described = await kms.send(new DescribeKeyCommand({ KeyId: 'alias/a2a-it' }));
    const viaAliasArn = await kms.send(
      new DescribeKeyCommand({ KeyId: 'arn:aws:kms:us-east-1:000000000000:alias/a2a-it' }),
    );
    const { CiphertextBlob } = await kms.send(
      new EncryptCommand({ KeyId: 'alias/a2a-it', Plaintext: utf8('via alias') }),
    );
    const decrypted = await kms.send(new DecryptCommand({ CiphertextBlob, KeyId: 'alias/a2a-it' }));
    const { Aliases } = await kms.send(new ListAliasesCommand({ KeyId: keyId }));

    expect(described.KeyMetadata?.Arn).toBe(keyArn);
    expect(viaAliasArn.KeyMetadata?.Arn).toBe(keyArn);
    expect(new TextDecoder().decode(decrypted.Plaintext)).toBe('via alias');
    expect(Aliases).toEqual([
      expect.objectContaining({
        AliasName: 'alias/a2a-it',
        AliasArn: 'arn:aws:kms:us-east-1:000000000000:alias/a2a-it',
        TargetKeyId: keyId,
      }),
    ]);
    expect(
      await rejectionName(
        kms.send(new CreateAliasCommand({ AliasName: 'alias/a2a-it', TargetKeyId: keyId })),
      ),
    ).toBe('AlreadyExistsException');
  });

  it('re-encrypts under another key and context', async () => {
    const other = await createKey('destination');
    const { CiphertextBlob } = await kms.send(
      new EncryptCommand({ KeyId: keyId, Plaintext: utf8('moving'), EncryptionContext: { a: '1' } }),
    );

    const moved = await kms.send(
      new ReEncryptCommand({
        CiphertextBlob,
        SourceEncryptionContext: { a: '1' },
        DestinationKeyId: other.arn,
        DestinationEncryptionContext: { b: '2' },
      }),
    );
    const decrypted = await kms.send(
      new DecryptCommand({ CiphertextBlob: moved.CiphertextBlob, EncryptionContext: { b: '2' } }),
    );

    expect(moved).toMatchObject({ SourceKeyId: keyArn, KeyId: other.arn });
    expect(decrypted.KeyId).toBe(other.arn);
    expect(new TextDecoder().decode(decrypted.Plaintext)).toBe('moving');
  });

  it('answers an unknown key with NotFoundException', async () => {
    const missing = '00000000-0000-0000-0000-000000000000';

    expect(await rejectionName(kms.send(new DescribeKeyCommand({ KeyId: missing })))).toBe(
      'NotFoundException',
    );
    expect(
      await rejectionName(kms.send(new EncryptCommand({ KeyId: 'alias/missing', Plaintext: utf8('x') }))),
    ).toBe('NotFoundException');
    expect(
      await rejectionName(kms.send(new GenerateDataKeyCommand({ KeyId: missing, KeySpec: 'AES_256' }))),
    ).toBe('NotFoundException');
  });

  it('answers an unsupported operation with HTTP 400 UnsupportedOperationException', async () => {
    const response = await fetch(emulator.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-amz-json-1.1',
        'X-Amz-Target': 'TrentService.NoSuchOperation',
      },
      body: '{}',
    });

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      __type: 'UnsupportedOperationException',
      message: expect.stringContaining('NoSuchOperation'),
    });
    expect(await rejectionName(kms.send(new GenerateRandomCommand({ NumberOfBytes: 8 })))).toBe(
      'UnsupportedOperationException',
    );
  });
});

describe('KmsSealer against the KMS emulator', () => {
  const context: SealContext = { taskId: 'task-it-1', field: 'result' };

  const createSealer = (overrides: { perTaskKeys?: boolean } = {}): KmsSealer =>
    new KmsSealer({ kms, keyId: 'alias/a2a-sealer', installation: 'integration', ...overrides });

  beforeAll(async () => {
    await kms.send(new CreateAliasCommand({ AliasName: 'alias/a2a-sealer', TargetKeyId: keyId }));
  });

  it('round-trips fields and costs one GenerateDataKey and one Decrypt, as the emulator counts', async () => {
    emulator.resetCounts();
    const sealer = createSealer();
    const opener = createSealer();
    const contexts = Array.from({ length: 5 }, (_, i) => ({ taskId: `task-it-${i}`, field: 'result' }));

    const blobs = await Promise.all(
      contexts.map((sealContext, i) => sealer.seal(utf8(`answer ${i}`), sealContext)),
    );
    const opened = await Promise.all(blobs.map((blob, i) => opener.open(blob, contexts[i] ?? context)));

    expect(opened.map((bytes) => new TextDecoder().decode(bytes))).toEqual(
      contexts.map((_, i) => `answer ${i}`),
    );
    expect(emulator.counts()).toEqual({ GenerateDataKey: 1, Decrypt: 1 });
  });

  it('refuses a blob moved to another task or field', async () => {
    const blob = await createSealer().seal(utf8('secret'), context);
    const opener = createSealer();

    await expect(opener.open(blob, { ...context, taskId: 'task-it-2' })).rejects.toBeInstanceOf(
      SealingFailedError,
    );
    await expect(opener.open(blob, { ...context, field: 'history' })).rejects.toBeInstanceOf(
      SealingFailedError,
    );
    expect(new TextDecoder().decode(await opener.open(blob, context))).toBe('secret');
  });

  it('in perTaskKeys mode has KMS itself refuse a blob moved to another task', async () => {
    emulator.resetCounts();
    const blob = await createSealer({ perTaskKeys: true }).seal(utf8('per task'), context);
    const opener = createSealer();

    const moved = await opener.open(blob, { ...context, taskId: 'task-it-2' }).then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(moved).toBeInstanceOf(SealingFailedError);
    expect((moved as SealingFailedError).cause).toBeInstanceOf(InvalidCiphertextException);
    expect(new TextDecoder().decode(await opener.open(blob, context))).toBe('per task');
    expect(emulator.counts()).toEqual({ GenerateDataKey: 1, Decrypt: 2 });
  });

  it('fails closed with SealingFailedError when the key does not exist', async () => {
    const sealer = new KmsSealer({ kms, keyId: 'alias/not-there', installation: 'integration' });

    const error = await sealer.seal(utf8('x'), context).then(
      () => undefined,
      (rejection: unknown) => rejection,
    );

    expect(error).toBeInstanceOf(SealingFailedError);
    expect((error as SealingFailedError).cause).toMatchObject({ name: 'NotFoundException' });
  });
});
