import { InvalidCiphertextException, KMSInternalException, NotFoundException } from '@aws-sdk/client-kms';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeSealer } from '../../shared/adapters/fake-sealer.ts';
import { KmsSealer, type KmsSealerOptions } from '../../shared/adapters/kms-sealer.ts';
import { SealingFailedError } from '../../shared/domain/errors.ts';
import type { SealContext } from '../../shared/domain/ports.ts';
import { FakeKms, KEY_ALIAS } from '../support/fake-kms.ts';

const INSTALLATION = 'unit-test';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const context: SealContext = { taskId: 'task-1', field: 'result' };

const createSealer = (kms: FakeKms, overrides: Partial<KmsSealerOptions> = {}): KmsSealer =>
  new KmsSealer({ kms, keyId: KEY_ALIAS, installation: INSTALLATION, ...overrides });

/** A clock the test moves by hand. */
const createManualClock = (): { now: () => number; advance: (ms: number) => void } => {
  let time = 1_700_000_000_000;
  return { now: () => time, advance: (ms) => (time += ms) };
};

const sealMany = async (sealer: KmsSealer, count: number, taskPrefix = 'task'): Promise<Uint8Array[]> => {
  const blobs: Uint8Array[] = [];
  for (let i = 0; i < count; i += 1) {
    blobs.push(await sealer.seal(utf8(`content ${i}`), { taskId: `${taskPrefix}-${i}`, field: 'result' }));
  }
  return blobs;
};

const captureRejection = async (promise: Promise<unknown>): Promise<SealingFailedError> => {
  const error = await promise.then(
    () => undefined,
    (rejection: unknown) => rejection,
  );
  if (!(error instanceof SealingFailedError))
    throw new Error(`expected SealingFailedError, got ${String(error)}`);
  return error;
};

describe('KmsSealer', () => {
  describe('sealing and opening', () => {
    it('opens what it sealed, and the blob holds no plaintext', async () => {
      const kms = new FakeKms();
      const sealer = createSealer(kms);
      const plaintext = utf8('the agent answered: forty-two, and here is why …');

      const blob = await sealer.seal(plaintext, context);

      expect(Buffer.from(blob).includes(Buffer.from(plaintext))).toBe(false);
      expect(blob[0]).toBe(1);
      expect(toHex(await sealer.open(blob, context))).toBe(toHex(plaintext));
      expect(toHex(await createSealer(kms).open(blob, context))).toBe(toHex(plaintext));
    });

    it('round-trips any bytes under any context (property)', async () => {
      const kms = new FakeKms();
      const sealer = createSealer(kms);
      const opener = createSealer(kms);
      await fc.assert(
        fc.asyncProperty(
          fc.uint8Array({ maxLength: 2048 }),
          fc.record({ taskId: fc.string({ minLength: 1 }), field: fc.string({ minLength: 1 }) }),
          async (plaintext, sealContext) => {
            const blob = await sealer.seal(plaintext, sealContext);
            expect(toHex(await opener.open(blob, sealContext))).toBe(toHex(plaintext));
          },
        ),
      );
      expect(kms.calls).toEqual({ GenerateDataKey: 1, Decrypt: 1 });
    });

    it('refuses a blob opened under any other context (property)', async () => {
      const sealer = createSealer(new FakeKms());
      const contextArbitrary = fc.record({ taskId: fc.string(), field: fc.string() });
      await fc.assert(
        fc.asyncProperty(
          fc.uint8Array({ maxLength: 256 }),
          contextArbitrary,
          contextArbitrary,
          async (plaintext, sealedAs, openedAs) => {
            fc.pre(sealedAs.taskId !== openedAs.taskId || sealedAs.field !== openedAs.field);
            const blob = await sealer.seal(plaintext, sealedAs);
            await expect(sealer.open(blob, openedAs)).rejects.toBeInstanceOf(SealingFailedError);
          },
        ),
      );
    });

    it('refuses a blob moved to another task or another field', async () => {
      const sealer = createSealer(new FakeKms());
      const blob = await sealer.seal(utf8('secret'), context);

      const otherTask = await captureRejection(sealer.open(blob, { ...context, taskId: 'task-2' }));
      const otherField = await captureRejection(sealer.open(blob, { ...context, field: 'history' }));

      expect(otherTask.message).toBe('Sealed blob failed to authenticate');
      expect(otherTask.details).toEqual({ operation: 'open', taskId: 'task-2', field: 'result' });
      expect(otherField.code).toBe('SEALING_FAILED');
    });

    it('refuses a blob with any single byte changed, or cut short', async () => {
      const sealer = createSealer(new FakeKms());
      const blob = await sealer.seal(utf8('sixteen bytes!!!'), context);

      for (let index = 0; index < blob.length; index += 1) {
        const tampered = Uint8Array.from(blob);
        tampered[index] = (tampered[index] ?? 0) ^ 0x01;
        await expect(sealer.open(tampered, context), `byte ${index}`).rejects.toBeInstanceOf(
          SealingFailedError,
        );
      }
      for (let length = 0; length < blob.length; length += 1) {
        await expect(
          sealer.open(blob.subarray(0, length), context),
          `length ${length}`,
        ).rejects.toBeInstanceOf(SealingFailedError);
      }
      expect(toHex(await sealer.open(blob, context))).toBe(toHex(utf8('sixteen bytes!!!')));
    });

    it('refuses blobs of another format', async () => {
      const sealer = createSealer(new FakeKms());
      const fakeBlob = await new FakeSealer().seal(utf8('x'), context);

      const malformed = await captureRejection(sealer.open(fakeBlob, context));
      await expect(sealer.open(new Uint8Array(0), context)).rejects.toBeInstanceOf(SealingFailedError);

      expect(malformed.message).toBe('Sealed blob is malformed');
    });

    it('zeroes the plaintext data keys KMS hands out', async () => {
      const kms = new FakeKms();
      await createSealer(kms, { perTaskKeys: true }).seal(utf8('a'), context);
      await createSealer(kms).seal(utf8('b'), context);

      expect(kms.issuedPlaintexts).toHaveLength(2);
      for (const plaintext of kms.issuedPlaintexts) {
        expect(plaintext.every((byte) => byte === 0)).toBe(true);
      }
    });
  });

  describe('data key caching', () => {
    it('uses one data key for many seals, and one Decrypt opens them all elsewhere', async () => {
      const kms = new FakeKms();
      const blobs = await sealMany(createSealer(kms), 50);
      const opener = createSealer(kms);

      for (const [i, blob] of blobs.entries()) {
        const opened = await opener.open(blob, { taskId: `task-${i}`, field: 'result' });
        expect(new TextDecoder().decode(opened)).toBe(`content ${i}`);
      }

      expect(kms.calls).toEqual({ GenerateDataKey: 1, Decrypt: 1 });
      expect(kms.generateContexts[0]).toEqual({ installation: INSTALLATION, purpose: 'a2a-task-content' });
    });

    it('opens its own blobs without a Decrypt', async () => {
      const kms = new FakeKms();
      const sealer = createSealer(kms);
      const blobs = await sealMany(sealer, 3);

      for (const [i, blob] of blobs.entries())
        await sealer.open(blob, { taskId: `task-${i}`, field: 'result' });

      expect(kms.calls.Decrypt).toBe(0);
    });

    it('generates a new data key after maxMessages seals', async () => {
      const kms = new FakeKms();
      const blobs = await sealMany(createSealer(kms, { cache: { maxMessages: 3 } }), 7);
      const opener = createSealer(kms);
      for (const [i, blob] of blobs.entries())
        await opener.open(blob, { taskId: `task-${i}`, field: 'result' });

      expect(kms.calls).toEqual({ GenerateDataKey: 3, Decrypt: 3 });
    });

    it('generates a new data key once maxAgeMs has passed', async () => {
      const kms = new FakeKms();
      const clock = createManualClock();
      const sealer = createSealer(kms, { clock: clock.now, cache: { maxAgeMs: 1_000 } });

      await sealer.seal(utf8('a'), context);
      clock.advance(999);
      await sealer.seal(utf8('b'), context);
      expect(kms.calls.GenerateDataKey).toBe(1);

      clock.advance(1);
      await sealer.seal(utf8('c'), context);
      expect(kms.calls.GenerateDataKey).toBe(2);
    });

    it('forgets opened data keys once maxAgeMs has passed', async () => {
      const kms = new FakeKms();
      const clock = createManualClock();
      const blob = await createSealer(kms).seal(utf8('a'), context);
      const opener = createSealer(kms, { clock: clock.now, cache: { maxAgeMs: 1_000 } });

      await opener.open(blob, context);
      clock.advance(999);
      await opener.open(blob, context);
      expect(kms.calls.Decrypt).toBe(1);

      clock.advance(1);
      await opener.open(blob, context);
      expect(kms.calls.Decrypt).toBe(2);
    });

    it('evicts the least recently used opened key when maxEntries is reached', async () => {
      const kms = new FakeKms();
      const [a, b, c] = await sealMany(createSealer(kms, { cache: { maxMessages: 1 } }), 3, 'lru');
      const opener = createSealer(kms, { cache: { maxEntries: 2 } });
      const openBlob = async (blob: Uint8Array | undefined, i: number): Promise<number> => {
        await opener.open(blob ?? new Uint8Array(), { taskId: `lru-${i}`, field: 'result' });
        return kms.calls.Decrypt;
      };

      expect(await openBlob(a, 0)).toBe(1);
      expect(await openBlob(b, 1)).toBe(2);
      expect(await openBlob(a, 0)).toBe(2); // hit; a is now the most recent
      expect(await openBlob(c, 2)).toBe(3); // evicts b, the least recently used
      expect(await openBlob(a, 0)).toBe(3);
      expect(await openBlob(b, 1)).toBe(4);
    });

    it('asks KMS for every open when maxEntries is 0', async () => {
      const kms = new FakeKms();
      const blob = await createSealer(kms).seal(utf8('a'), context);
      const opener = createSealer(kms, { cache: { maxEntries: 0 } });

      await opener.open(blob, context);
      await opener.open(blob, context);

      expect(kms.calls.Decrypt).toBe(2);
    });

    it('rejects cache bounds that would never let a key be used', () => {
      const kms = new FakeKms();
      expect(() => createSealer(kms, { cache: { maxMessages: 0 } })).toThrow(RangeError);
      expect(() => createSealer(kms, { cache: { maxAgeMs: 0 } })).toThrow(RangeError);
      expect(() => createSealer(kms, { cache: { maxEntries: -1 } })).toThrow(RangeError);
    });
  });

  describe('perTaskKeys', () => {
    it('asks for a fresh data key per seal with the taskId in the KMS context', async () => {
      const kms = new FakeKms();
      const sealer = createSealer(kms, { perTaskKeys: true });

      const first = await sealer.seal(utf8('a'), context);
      const second = await sealer.seal(utf8('b'), { ...context, field: 'history' });
      await sealer.seal(utf8('c'), { ...context, taskId: 'task-9' });

      expect(kms.calls.GenerateDataKey).toBe(3);
      expect(kms.generateContexts).toEqual([
        { installation: INSTALLATION, purpose: 'a2a-task-content', taskId: 'task-1' },
        { installation: INSTALLATION, purpose: 'a2a-task-content', taskId: 'task-1' },
        { installation: INSTALLATION, purpose: 'a2a-task-content', taskId: 'task-9' },
      ]);
      expect(new TextDecoder().decode(await sealer.open(first, context))).toBe('a');
      expect(new TextDecoder().decode(await sealer.open(second, { ...context, field: 'history' }))).toBe('b');
    });

    it('opens every per-task blob through KMS, bound to its task, whatever the opener mode', async () => {
      const kms = new FakeKms();
      const blob = await createSealer(kms, { perTaskKeys: true }).seal(utf8('a'), context);
      const opener = createSealer(kms);

      await opener.open(blob, context);
      await opener.open(blob, context);

      expect(kms.calls.Decrypt).toBe(2);
      expect(kms.decryptContexts).toEqual([
        { installation: INSTALLATION, purpose: 'a2a-task-content', taskId: 'task-1' },
        { installation: INSTALLATION, purpose: 'a2a-task-content', taskId: 'task-1' },
      ]);
    });

    it('is refused by KMS itself when the blob is moved to another task', async () => {
      const kms = new FakeKms();
      const blob = await createSealer(kms, { perTaskKeys: true }).seal(utf8('a'), context);

      const error = await captureRejection(createSealer(kms).open(blob, { ...context, taskId: 'task-2' }));

      expect(error.message).toBe('KMS Decrypt failed');
      expect(error.cause).toBeInstanceOf(InvalidCiphertextException);
    });
  });

  describe('single flight', () => {
    it('shares one GenerateDataKey among concurrent seals', async () => {
      const kms = new FakeKms();
      const sealer = createSealer(kms);
      const release = kms.hold();

      const sealing = Array.from({ length: 10 }, (_, i) =>
        sealer.seal(utf8(`c${i}`), { ...context, taskId: `t${i}` }),
      );
      release();
      const blobs = await Promise.all(sealing);

      expect(kms.calls.GenerateDataKey).toBe(1);
      const opened = await Promise.all(
        blobs.map((blob, i) => sealer.open(blob, { ...context, taskId: `t${i}` })),
      );
      expect(opened.map((bytes) => new TextDecoder().decode(bytes))).toEqual(
        Array.from({ length: 10 }, (_, i) => `c${i}`),
      );
    });

    it('still honours maxMessages when concurrent seals outnumber it', async () => {
      const kms = new FakeKms();
      const sealer = createSealer(kms, { cache: { maxMessages: 4 } });
      const release = kms.hold();

      const sealing = Array.from({ length: 10 }, () => sealer.seal(utf8('x'), context));
      release();
      await Promise.all(sealing);

      expect(kms.calls.GenerateDataKey).toBe(3);
    });

    it('shares one Decrypt among concurrent opens of blobs under one data key', async () => {
      const kms = new FakeKms();
      const blobs = await sealMany(createSealer(kms), 10);
      const opener = createSealer(kms);
      const release = kms.hold();

      const opening = blobs.map((blob, i) => opener.open(blob, { taskId: `task-${i}`, field: 'result' }));
      release();
      await Promise.all(opening);

      expect(kms.calls.Decrypt).toBe(1);
    });
  });

  describe('failing closed', () => {
    it('rejects seal and open with SealingFailedError when KMS fails, and recovers after', async () => {
      const kms = new FakeKms();
      const blob = await createSealer(kms).seal(utf8('a'), context);
      const sealer = createSealer(kms);
      const outage = new KMSInternalException({ message: 'boom', $metadata: {} });
      kms.failure = outage;

      const sealError = await captureRejection(sealer.seal(utf8('b'), context));
      const openError = await captureRejection(sealer.open(blob, context));

      expect(sealError.message).toBe('KMS GenerateDataKey failed');
      expect(sealError.cause).toBe(outage);
      expect(sealError.details).toEqual({ operation: 'seal', taskId: 'task-1', field: 'result' });
      expect(openError.message).toBe('KMS Decrypt failed');
      expect(openError.cause).toBe(outage);

      kms.failure = undefined;
      expect(
        new TextDecoder().decode(await sealer.open(await sealer.seal(utf8('c'), context), context)),
      ).toBe('c');
      expect(new TextDecoder().decode(await sealer.open(blob, context))).toBe('a');
    });

    it('rejects every concurrent seal sharing a failed GenerateDataKey, each with its own context', async () => {
      const kms = new FakeKms();
      const sealer = createSealer(kms);
      kms.failure = new KMSInternalException({ message: 'boom', $metadata: {} });
      const release = kms.hold();

      const sealing = ['t1', 't2'].map((taskId) =>
        captureRejection(sealer.seal(utf8('x'), { ...context, taskId })),
      );
      release();
      const errors = await Promise.all(sealing);

      expect(kms.calls.GenerateDataKey).toBe(1);
      expect(errors.map((error) => error.details.taskId)).toEqual(['t1', 't2']);
    });

    it('rejects when the configured key does not exist', async () => {
      const error = await captureRejection(
        createSealer(new FakeKms(), { keyId: 'alias/missing' }).seal(utf8('a'), context),
      );

      expect(error.cause).toBeInstanceOf(NotFoundException);
    });
  });
});

describe('FakeSealer', () => {
  it('round-trips, binds the context and counts calls', async () => {
    const sealer = new FakeSealer();
    const blob = await sealer.seal(utf8('secret'), context);

    expect(Buffer.from(blob).includes(Buffer.from('secret'))).toBe(false);
    expect(new TextDecoder().decode(await new FakeSealer().open(blob, context))).toBe('secret');
    await expect(sealer.open(blob, { ...context, taskId: 'task-2' })).rejects.toBeInstanceOf(
      SealingFailedError,
    );
    await expect(sealer.open(blob, { ...context, field: 'history' })).rejects.toBeInstanceOf(
      SealingFailedError,
    );
    await expect(sealer.open(blob.subarray(0, 10), context)).rejects.toBeInstanceOf(SealingFailedError);
    expect(sealer.sealCount).toBe(1);
    expect(sealer.openCount).toBe(3);
  });

  it('refuses KmsSealer blobs and vice versa', async () => {
    const kmsBlob = await createSealer(new FakeKms()).seal(utf8('a'), context);

    await expect(new FakeSealer().open(kmsBlob, context)).rejects.toBeInstanceOf(SealingFailedError);
  });
});
