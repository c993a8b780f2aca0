import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/**
 * A small KMS-protocol endpoint for the local stack (docs/decisions/0002-local-stack.md "KMS"): AWS JSON 1.1 on
 * node:http, so the production `@aws-sdk/client-kms` code runs unchanged against it through
 * `AWS_ENDPOINT_URL_KMS` or the client's `endpoint`. Symmetric keys only, held in memory.
 *
 * Ciphertext blobs are this emulator's own format (real KMS blobs are opaque too):
 *
 *   offset 0       u8    format version (1)
 *   offset 1       u8    key id length K
 *   offset 2       K     key id (the key's UUID, ASCII)
 *   offset 2+K     12    AES-GCM IV
 *   offset 14+K    16    AES-GCM tag
 *   offset 30+K    …     ciphertext
 *
 * Encrypted with AES-256-GCM under the key's master key; the AAD is the blob header plus the
 * canonicalized encryption context, so Decrypt with another context, or a blob whose key id was
 * edited, fails with InvalidCiphertextException as real KMS does.
 *
 * Run standalone: `tsx infra/local/kms-emulator.ts --port 4599` prints the URL, stops on SIGINT.
 */

export interface KmsEmulatorOptions {
  /** 0 (the default) picks an ephemeral port. */
  readonly port?: number;
  readonly host?: string;
  /** Region written into key and alias ARNs. */
  readonly region?: string;
}

export interface KmsEmulator {
  readonly url: string;
  readonly port: number;
  /** Requests received per operation (including failed ones), for cross-checking client-side counters. */
  counts(): Record<string, number>;
  resetCounts(): void;
  stop(): Promise<void>;
}

const ACCOUNT_ID = '000000000000';
const JSON_CONTENT_TYPE = 'application/x-amz-json-1.1';
const TARGET_PREFIX = 'TrentService.';
const BLOB_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_BODY_BYTES = 1024 * 1024;
/** Real KMS limits Encrypt plaintext to 4 KiB and data keys to 1 KiB. */
const MAX_PLAINTEXT_BYTES = 4096;
const MAX_DATA_KEY_BYTES = 1024;
const SYMMETRIC_DEFAULT = 'SYMMETRIC_DEFAULT';

interface KeyRecord {
  readonly keyId: string;
  readonly arn: string;
  readonly material: Buffer;
  readonly description: string;
  readonly creationDate: number;
}

interface AliasRecord {
  readonly aliasName: string;
  readonly targetKeyId: string;
  readonly creationDate: number;
}

type JsonObject = Record<string, unknown>;

/** A KMS error: its `type` becomes `__type`, which the SDK turns into the modeled exception class. */
class KmsFault extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

interface KmsState {
  readonly region: string;
  readonly keys: Map<string, KeyRecord>;
  readonly aliases: Map<string, AliasRecord>;
}

type Operation = (state: KmsState, input: JsonObject) => JsonObject;

// ---- input readers: the SDK already validates shapes, these keep the emulator honest for raw callers

const readString = (input: JsonObject, name: string): string | undefined => {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new KmsFault('ValidationException', `${name} must be a string`);
  return value;
};

const requireString = (input: JsonObject, name: string): string => {
  const value = readString(input, name);
  if (value === undefined || value === '') {
    throw new KmsFault('ValidationException', `1 validation error detected: ${name} must not be null`);
  }
  return value;
};

const requireBlob = (input: JsonObject, name: string): Buffer => {
  const encoded = requireString(input, name);
  // Buffer.from silently skips bad characters; real KMS rejects them.
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) {
    throw new KmsFault('SerializationException', `${name} is not valid base64`);
  }
  return Buffer.from(encoded, 'base64');
};

const readEncryptionContext = (input: JsonObject, name = 'EncryptionContext'): Record<string, string> => {
  const value = input[name];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new KmsFault('ValidationException', `${name} must be a map of strings`);
  }
  const context: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string')
      throw new KmsFault('ValidationException', `${name} values must be strings`);
    context[key] = entry;
  }
  return context;
};

const readPositiveInteger = (input: JsonObject, name: string): number | undefined => {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new KmsFault('ValidationException', `${name} must be a positive integer`);
  }
  return value;
};

// ---- keys and aliases

const toKeyArn = (state: KmsState, keyId: string): string =>
  `arn:aws:kms:${state.region}:${ACCOUNT_ID}:key/${keyId}`;

const toAliasArn = (state: KmsState, aliasName: string): string =>
  `arn:aws:kms:${state.region}:${ACCOUNT_ID}:${aliasName}`;

const toEpochSeconds = (millis: number): number => millis / 1000;

/** Accepts everything real KMS accepts as KeyId: key id, key ARN, alias name, alias ARN. */
const resolveKey = (state: KmsState, keyIdInput: string): KeyRecord => {
  const resource = keyIdInput.startsWith('arn:') ? keyIdInput.split(':').slice(5).join(':') : keyIdInput;
  if (resource.startsWith('alias/')) {
    const alias = state.aliases.get(resource);
    const key = alias === undefined ? undefined : state.keys.get(alias.targetKeyId);
    if (key === undefined)
      throw new KmsFault('NotFoundException', `Alias ${toAliasArn(state, resource)} is not found.`);
    return key;
  }
  const keyId = resource.startsWith('key/') ? resource.slice('key/'.length) : resource;
  const key = state.keys.get(keyId);
  if (key === undefined)
    throw new KmsFault('NotFoundException', `Key '${toKeyArn(state, keyId)}' does not exist`);
  return key;
};

const describeKeyMetadata = (key: KeyRecord): JsonObject => ({
  AWSAccountId: ACCOUNT_ID,
  KeyId: key.keyId,
  Arn: key.arn,
  CreationDate: toEpochSeconds(key.creationDate),
  Enabled: true,
  Description: key.description,
  KeyUsage: 'ENCRYPT_DECRYPT',
  KeyState: 'Enabled',
  Origin: 'AWS_KMS',
  KeyManager: 'CUSTOMER',
  CustomerMasterKeySpec: SYMMETRIC_DEFAULT,
  KeySpec: SYMMETRIC_DEFAULT,
  EncryptionAlgorithms: [SYMMETRIC_DEFAULT],
  MultiRegion: false,
});

// ---- ciphertext blobs

/** Sorted key/value pairs: the same context in any property order gives the same AAD. */
const canonicalizeEncryptionContext = (context: Record<string, string>): string =>
  JSON.stringify(Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

const encodeBlobHeader = (keyId: string): Buffer => {
  const id = Buffer.from(keyId, 'ascii');
  return Buffer.concat([Buffer.from([BLOB_VERSION, id.length]), id]);
};

const encryptBlob = (key: KeyRecord, plaintext: Buffer, context: Record<string, string>): Buffer => {
  const header = encodeBlobHeader(key.keyId);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.material, iv);
  cipher.setAAD(Buffer.concat([header, Buffer.from(canonicalizeEncryptionContext(context))]));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([header, iv, cipher.getAuthTag(), ciphertext]);
};

interface ParsedBlob {
  readonly keyId: string;
  readonly header: Buffer;
  readonly iv: Buffer;
  readonly tag: Buffer;
  readonly ciphertext: Buffer;
}

const invalidCiphertext = (): KmsFault =>
  new KmsFault('InvalidCiphertextException', 'The ciphertext is invalid.');

const parseBlob = (blob: Buffer): ParsedBlob => {
  const version = blob[0];
  const idLength = blob[1];
  if (
    version !== BLOB_VERSION ||
    idLength === undefined ||
    blob.length < 2 + idLength + IV_BYTES + TAG_BYTES
  ) {
    throw invalidCiphertext();
  }
  const ivStart = 2 + idLength;
  const tagStart = ivStart + IV_BYTES;
  return {
    keyId: blob.subarray(2, ivStart).toString('ascii'),
    header: blob.subarray(0, ivStart),
    iv: blob.subarray(ivStart, tagStart),
    tag: blob.subarray(tagStart, tagStart + TAG_BYTES),
    ciphertext: blob.subarray(tagStart + TAG_BYTES),
  };
};

const decryptBlob = (key: KeyRecord, blob: ParsedBlob, context: Record<string, string>): Buffer => {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.material, blob.iv);
    decipher.setAAD(Buffer.concat([blob.header, Buffer.from(canonicalizeEncryptionContext(context))]));
    decipher.setAuthTag(blob.tag);
    return Buffer.concat([decipher.update(blob.ciphertext), decipher.final()]);
  } catch {
    throw invalidCiphertext();
  }
};

/** The key comes from the blob; a KeyId in the request only asserts which key that must be. */
const openCiphertext = (
  state: KmsState,
  ciphertextBlob: Buffer,
  context: Record<string, string>,
  expectedKeyId: string | undefined,
): { key: KeyRecord; plaintext: Buffer } => {
  const blob = parseBlob(ciphertextBlob);
  const expected = expectedKeyId === undefined ? undefined : resolveKey(state, expectedKeyId);
  const key = state.keys.get(blob.keyId);
  if (key === undefined) {
    throw new KmsFault('NotFoundException', `Key '${toKeyArn(state, blob.keyId)}' does not exist`);
  }
  if (expected !== undefined && expected.keyId !== key.keyId) {
    throw new KmsFault(
      'IncorrectKeyException',
      'The key ID in the request does not identify a KMS key that can perform this operation.',
    );
  }
  return { key, plaintext: decryptBlob(key, blob, context) };
};

const requireSymmetricAlgorithm = (input: JsonObject, name = 'EncryptionAlgorithm'): void => {
  const algorithm = readString(input, name);
  if (algorithm !== undefined && algorithm !== SYMMETRIC_DEFAULT) {
    throw new KmsFault('InvalidKeyUsageException', `${algorithm} is not supported by symmetric keys`);
  }
};

const encodeBase64 = (bytes: Buffer): string => bytes.toString('base64');

// ---- operations

const createKey: Operation = (state, input) => {
  const keySpec =
    readString(input, 'KeySpec') ?? readString(input, 'CustomerMasterKeySpec') ?? SYMMETRIC_DEFAULT;
  const keyUsage = readString(input, 'KeyUsage') ?? 'ENCRYPT_DECRYPT';
  if (keySpec !== SYMMETRIC_DEFAULT || keyUsage !== 'ENCRYPT_DECRYPT') {
    throw new KmsFault(
      'UnsupportedOperationException',
      'The local KMS emulator supports symmetric keys only.',
    );
  }
  const keyId = randomUUID();
  const key: KeyRecord = {
    keyId,
    arn: toKeyArn(state, keyId),
    material: randomBytes(32),
    description: readString(input, 'Description') ?? '',
    creationDate: Date.now(),
  };
  state.keys.set(keyId, key);
  return { KeyMetadata: describeKeyMetadata(key) };
};

const describeKey: Operation = (state, input) => ({
  KeyMetadata: describeKeyMetadata(resolveKey(state, requireString(input, 'KeyId'))),
});

const createAlias: Operation = (state, input) => {
  const aliasName = requireString(input, 'AliasName');
  if (!/^alias\/[a-zA-Z0-9/_-]{1,250}$/.test(aliasName) || aliasName.startsWith('alias/aws/')) {
    throw new KmsFault('InvalidAliasNameException', `Alias name ${aliasName} is not valid.`);
  }
  if (state.aliases.has(aliasName)) {
    throw new KmsFault(
      'AlreadyExistsException',
      `An alias with the name ${toAliasArn(state, aliasName)} already exists`,
    );
  }
  const targetKeyId = requireString(input, 'TargetKeyId');
  if (targetKeyId.startsWith('alias/') || targetKeyId.includes(':alias/')) {
    throw new KmsFault('ValidationException', 'TargetKeyId must be a key id or key ARN, not an alias.');
  }
  const key = resolveKey(state, targetKeyId);
  state.aliases.set(aliasName, { aliasName, targetKeyId: key.keyId, creationDate: Date.now() });
  return {};
};

const listAliases: Operation = (state, input) => {
  const keyIdFilter = readString(input, 'KeyId');
  const targetKeyId = keyIdFilter === undefined ? undefined : resolveKey(state, keyIdFilter).keyId;
  const limit = Math.min(readPositiveInteger(input, 'Limit') ?? 50, 100);
  const start = Number(readString(input, 'Marker') ?? '0');
  if (!Number.isInteger(start) || start < 0)
    throw new KmsFault('InvalidMarkerException', 'The marker is invalid.');
  const matching = [...state.aliases.values()].filter(
    (alias) => targetKeyId === undefined || alias.targetKeyId === targetKeyId,
  );
  const page = matching.slice(start, start + limit);
  const truncated = start + limit < matching.length;
  return {
    Aliases: page.map((alias) => ({
      AliasName: alias.aliasName,
      AliasArn: toAliasArn(state, alias.aliasName),
      TargetKeyId: alias.targetKeyId,
      CreationDate: toEpochSeconds(alias.creationDate),
      LastUpdatedDate: toEpochSeconds(alias.creationDate),
    })),
    Truncated: truncated,
    ...(truncated ? { NextMarker: String(start + limit) } : {}),
  };
};

const readDataKeyLength = (input: JsonObject): number => {
  const keySpec = readString(input, 'KeySpec');
  const numberOfBytes = readPositiveInteger(input, 'NumberOfBytes');
  if ((keySpec === undefined) === (numberOfBytes === undefined)) {
    throw new KmsFault('ValidationException', 'Specify either KeySpec or NumberOfBytes, but not both.');
  }
  if (numberOfBytes !== undefined) {
    if (numberOfBytes > MAX_DATA_KEY_BYTES) {
      throw new KmsFault('ValidationException', `NumberOfBytes must be at most ${MAX_DATA_KEY_BYTES}`);
    }
    return numberOfBytes;
  }
  if (keySpec === 'AES_256') return 32;
  if (keySpec === 'AES_128') return 16;
  throw new KmsFault('ValidationException', `KeySpec ${keySpec} is not valid`);
};

const generateDataKeyWithoutPlaintext: Operation = (state, input) => {
  const key = resolveKey(state, requireString(input, 'KeyId'));
  const dataKey = randomBytes(readDataKeyLength(input));
  const blob = encryptBlob(key, dataKey, readEncryptionContext(input));
  dataKey.fill(0);
  return { KeyId: key.arn, CiphertextBlob: encodeBase64(blob) };
};

const generateDataKey: Operation = (state, input) => {
  const key = resolveKey(state, requireString(input, 'KeyId'));
  const dataKey = randomBytes(readDataKeyLength(input));
  const blob = encryptBlob(key, dataKey, readEncryptionContext(input));
  return { KeyId: key.arn, CiphertextBlob: encodeBase64(blob), Plaintext: encodeBase64(dataKey) };
};

const encrypt: Operation = (state, input) => {
  const key = resolveKey(state, requireString(input, 'KeyId'));
  requireSymmetricAlgorithm(input);
  const plaintext = requireBlob(input, 'Plaintext');
  if (plaintext.length > MAX_PLAINTEXT_BYTES) {
    throw new KmsFault('ValidationException', `Plaintext must be at most ${MAX_PLAINTEXT_BYTES} bytes`);
  }
  const blob = encryptBlob(key, plaintext, readEncryptionContext(input));
  return { KeyId: key.arn, CiphertextBlob: encodeBase64(blob), EncryptionAlgorithm: SYMMETRIC_DEFAULT };
};

const decrypt: Operation = (state, input) => {
  requireSymmetricAlgorithm(input);
  const { key, plaintext } = openCiphertext(
    state,
    requireBlob(input, 'CiphertextBlob'),
    readEncryptionContext(input),
    readString(input, 'KeyId'),
  );
  return { KeyId: key.arn, Plaintext: encodeBase64(plaintext), EncryptionAlgorithm: SYMMETRIC_DEFAULT };
};

const reEncrypt: Operation = (state, input) => {
  requireSymmetricAlgorithm(input, 'SourceEncryptionAlgorithm');
  requireSymmetricAlgorithm(input, 'DestinationEncryptionAlgorithm');
  const source = openCiphertext(
    state,
    requireBlob(input, 'CiphertextBlob'),
    readEncryptionContext(input, 'SourceEncryptionContext'),
    readString(input, 'SourceKeyId'),
  );
  const destination = resolveKey(state, requireString(input, 'DestinationKeyId'));
  const blob = encryptBlob(
    destination,
    source.plaintext,
    readEncryptionContext(input, 'DestinationEncryptionContext'),
  );
  source.plaintext.fill(0);
  return {
    CiphertextBlob: encodeBase64(blob),
    SourceKeyId: source.key.arn,
    KeyId: destination.arn,
    SourceEncryptionAlgorithm: SYMMETRIC_DEFAULT,
    DestinationEncryptionAlgorithm: SYMMETRIC_DEFAULT,
  };
};

const operations: Readonly<Record<string, Operation>> = {
  CreateKey: createKey,
  DescribeKey: describeKey,
  CreateAlias: createAlias,
  ListAliases: listAliases,
  GenerateDataKey: generateDataKey,
  GenerateDataKeyWithoutPlaintext: generateDataKeyWithoutPlaintext,
  Encrypt: encrypt,
  Decrypt: decrypt,
  ReEncrypt: reEncrypt,
};

// ---- HTTP

const readBody = async (request: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const bytes = chunk as Buffer;
    size += bytes.length;
    if (size > MAX_BODY_BYTES) throw new KmsFault('ValidationException', 'Request body is too large', 413);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString('utf8');
};

const parseInput = (body: string): JsonObject => {
  if (body.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new KmsFault('SerializationException', 'The request body is not valid JSON.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new KmsFault('SerializationException', 'The request body must be a JSON object.');
  }
  return parsed as JsonObject;
};

const sendJson = (response: ServerResponse, status: number, body: JsonObject): void => {
  const payload = JSON.stringify(body);
  response.writeHead(status, {
    'Content-Type': JSON_CONTENT_TYPE,
    'Content-Length': Buffer.byteLength(payload),
    'x-amzn-RequestId': randomUUID(),
  });
  response.end(payload);
};

const sendFault = (response: ServerResponse, fault: KmsFault): void =>
  sendJson(response, fault.status, { __type: fault.type, message: fault.message });

/**
 * Real KMS answers an unknown target with UnknownOperationException, which the SDK does not
 * model; the modeled UnsupportedOperationException gives callers a typed error instead.
 */
const readOperationName = (request: IncomingMessage): string => {
  const target = request.headers['x-amz-target'];
  if (typeof target !== 'string' || !target.startsWith(TARGET_PREFIX)) {
    throw new KmsFault('UnsupportedOperationException', `Unknown target ${String(target)}`);
  }
  return target.slice(TARGET_PREFIX.length);
};

const requireJsonContentType = (request: IncomingMessage): void => {
  const contentType = request.headers['content-type'] ?? '';
  if (!contentType.startsWith(JSON_CONTENT_TYPE)) {
    throw new KmsFault('SerializationException', `Content-Type must be ${JSON_CONTENT_TYPE}`);
  }
};

const handleRequest = async (
  state: KmsState,
  requestCounts: Map<string, number>,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> => {
  try {
    if (request.method !== 'POST')
      throw new KmsFault('UnsupportedOperationException', 'Only POST is supported', 405);
    const operationName = readOperationName(request);
    requestCounts.set(operationName, (requestCounts.get(operationName) ?? 0) + 1);
    requireJsonContentType(request);
    const input = parseInput(await readBody(request));
    const operation = Object.hasOwn(operations, operationName) ? operations[operationName] : undefined;
    if (operation === undefined) {
      throw new KmsFault(
        'UnsupportedOperationException',
        `${operationName} is not supported by the local KMS emulator`,
      );
    }
    sendJson(response, 200, operation(state, input));
  } catch (error: unknown) {
    sendFault(
      response,
      error instanceof KmsFault ? error : new KmsFault('KMSInternalException', 'Internal error', 500),
    );
  }
};

const formatUrl = (host: string, port: number): string =>
  host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;

const listen = (server: Server, port: number, host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });

const closeServer = (server: Server): Promise<void> =>
  new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    // SDK clients keep connections alive; without this, close() waits for their idle timeout.
    server.closeAllConnections();
  });

export const startKmsEmulator = async (options: KmsEmulatorOptions = {}): Promise<KmsEmulator> => {
  const host = options.host ?? '127.0.0.1';
  const state: KmsState = { region: options.region ?? 'us-east-1', keys: new Map(), aliases: new Map() };
  const requestCounts = new Map<string, number>();
  const server = createServer((request, response) => {
    void handleRequest(state, requestCounts, request, response);
  });
  const port = await listen(server, options.port ?? 0, host);
  let stopping: Promise<void> | undefined;
  return {
    url: formatUrl(host, port),
    port,
    counts: () => Object.fromEntries(requestCounts),
    resetCounts: () => requestCounts.clear(),
    stop: () => {
      stopping ??= closeServer(server);
      return stopping;
    },
  };
};

const runCli = async (): Promise<void> => {
  const { values } = parseArgs({
    options: { port: { type: 'string', default: '4599' }, host: { type: 'string', default: '127.0.0.1' } },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`Invalid --port ${values.port}`);
  const emulator = await startKmsEmulator({ port, host: values.host });
  console.log(emulator.url);
  const shutdown = (): void => {
    void emulator.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
};

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  runCli().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
