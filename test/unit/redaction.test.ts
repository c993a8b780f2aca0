import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Artifact, JsonValue, Message, Part } from '../../shared/domain/a2a.ts';
import {
  createRedactor,
  fullyRedacted,
  isSecretKey,
  type RedactionPattern,
  redactArtifacts,
  redactionPatterns,
  redactJson,
  redactMessage,
  redactParts,
  redactText,
} from '../../shared/domain/redaction.ts';

// ---------------------------------------------------------------------------------------------
// Arbitraries for planted values. Check digits are computed here, independently of the code.

const chars = (alphabet: string, minLength: number, maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...alphabet), minLength, maxLength });

const upper = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const digits = '0123456789';
const base62 = `${upper}${upper.toLowerCase()}${digits}`;
const base64url = `${base62}-_`;

/** Luhn: the check digit that makes `payload + digit` valid. */
const luhnCheckDigit = (payload: string): string => {
  let sum = 0;
  [...payload].reverse().forEach((char, index) => {
    let digit = Number(char);
    if (index % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  });
  return String((10 - (sum % 10)) % 10);
};

const groupBy = (value: string, sizes: readonly number[], separator: string): string => {
  const groups: string[] = [];
  let offset = 0;
  for (const size of sizes) {
    if (offset >= value.length) break;
    groups.push(value.slice(offset, offset + size));
    offset += size;
  }
  if (offset < value.length) groups.push(value.slice(offset));
  return groups.join(separator);
};

const cardArb = fc
  .tuple(fc.integer({ min: 13, max: 19 }), fc.constantFrom('', ' ', '-'), fc.boolean())
  .chain(([length, separator, amex]) =>
    chars(digits, length - 1, length - 1).map((payload) => {
      const number = `${payload}${luhnCheckDigit(payload)}`;
      const sizes = amex && length === 15 ? [4, 6, 5] : [4, 4, 4, 4, 4];
      return { planted: separator === '' ? number : groupBy(number, sizes, separator), digitsOnly: number };
    }),
  );

/** BBAN shapes per country: `n` digits, `a` capitals, `c` either. */
const ibanFormats: Record<string, string> = {
  DE: 'nnnnnnnnnnnnnnnnnn',
  GB: 'aaaannnnnnnnnnnnnn',
  FR: 'nnnnnnnnnnccccccccccnn',
  NL: 'aaaannnnnnnnnn',
  CH: 'nnnnncccccccccccc',
  BE: 'nnnnnnnnnnnn',
  IT: 'annnnnnnnnnccccccccccccc',
  ES: 'nnnnnnnnnnnnnnnnnnnn',
  AT: 'nnnnnnnnnnnnnnnn',
  PL: 'nnnnnnnnnnnnnnnnnnnnnnnn',
};

const mod97 = (numeric: string): number => Number(BigInt(numeric) % 97n);
const toNumeric = (text: string): string =>
  [...text].map((char) => (/[A-Z]/.test(char) ? String(char.charCodeAt(0) - 55) : char)).join('');

const ibanArb = fc
  .tuple(
    fc.constantFrom(...Object.keys(ibanFormats)),
    fc.constantFrom('compact', 'print', 'lower'),
    fc.array(fc.nat(), { minLength: 30, maxLength: 30 }),
  )
  .map(([country, style, randomness]) => {
    const pick = (alphabet: string, index: number) => alphabet[(randomness[index] ?? 0) % alphabet.length]!;
    const bban = [...(ibanFormats[country] ?? '')]
      .map((kind, index) => pick(kind === 'n' ? digits : kind === 'a' ? upper : `${upper}${digits}`, index))
      .join('');
    const check = String(98 - mod97(toNumeric(`${bban}${country}00`))).padStart(2, '0');
    const compact = `${country}${check}${bban}`;
    const planted =
      style === 'print'
        ? groupBy(compact, Array(9).fill(4), ' ')
        : style === 'lower'
          ? compact.toLowerCase()
          : compact;
    return { planted, digitsOnly: compact };
  });

const phoneArb = fc.oneof(
  // International: + country code, groups with separators, 8–15 digits in all.
  fc
    .tuple(
      fc.integer({ min: 1, max: 999 }),
      fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 2, maxLength: 5 }),
      fc.constantFrom(' ', '-', '.', ''),
    )
    .filter(([code, sizes]) => {
      const count = String(code).length + sizes.reduce((a, b) => a + b, 0);
      return count >= 8 && count <= 15;
    })
    .chain(([code, sizes, separator]) =>
      chars(
        digits,
        sizes.reduce((a, b) => a + b, 0),
        sizes.reduce((a, b) => a + b, 0),
      ).map((subscriber) => ({
        planted: `+${code} ${groupBy(subscriber, sizes, separator)}`,
        digitsOnly: `${code}${subscriber}`,
      })),
    ),
  // North American: (555) 123-4567, 555-123-4567, 555.123.4567, 555 123 4567.
  fc
    .tuple(chars('23456789', 1, 1), chars(digits, 9, 9), fc.constantFrom('paren', '-', '.', ' '))
    .map(([first, rest, style]) => {
      const number = `${first}${rest}`;
      const [area, exchange, line] = [number.slice(0, 3), number.slice(3, 6), number.slice(6)];
      const planted =
        style === 'paren' ? `(${area}) ${exchange}-${line}` : [area, exchange, line].join(style);
      return { planted, digitsOnly: number };
    }),
  // National with trunk prefix 0: 030 12345678, 0171/1234567, (030) 1234567, 06 12 34 56 78.
  fc
    .tuple(chars(digits, 1, 3), chars(digits, 5, 8), fc.constantFrom(' ', '-', '/', 'paren', 'grouped'))
    .map(([area, subscriber, style]) => {
      const number = `0${area}${subscriber}`;
      const planted =
        style === 'paren'
          ? `(0${area}) ${subscriber}`
          : style === 'grouped'
            ? `0${area} ${groupBy(subscriber, subscriber.length % 2 === 0 ? [2, 2, 2, 2] : [3, 2, 2], ' ')}`
            : `0${area}${style}${subscriber}`;
      return { planted, digitsOnly: number };
    }),
);

interface Planted {
  readonly kind: string;
  /** The whole planted text (it must not survive). */
  readonly planted: string;
  /** The secret inside it (must not survive either), e.g. the password of a URL. */
  readonly secret: string;
}

const plantedSecretArb: fc.Arbitrary<Planted> = fc.oneof(
  fc.emailAddress().map((email) => ({ kind: 'email', planted: email, secret: email })),
  chars(base62, 20, 60).chain((body) =>
    fc
      .constantFrom('sk-', 'sk-proj-', 'sk-svcacct-', 'sk-ant-api03-')
      .map((prefix) => ({ kind: 'openai/anthropic', planted: `${prefix}${body}`, secret: body })),
  ),
  fc
    .tuple(fc.constantFrom('ghp_', 'gho_', 'ghs_'), chars(base62, 36, 36))
    .map(([prefix, body]) => ({ kind: 'github', planted: `${prefix}${body}`, secret: body })),
  chars(`${base62}_`, 82, 82).map((body) => ({
    kind: 'github-pat',
    planted: `github_pat_${body}`,
    secret: body,
  })),
  fc
    .tuple(fc.constantFrom('a', 'b', 'p', 'r'), chars(digits, 10, 13), chars(base62, 12, 32))
    .map(([type, id, body]) => ({ kind: 'slack', planted: `xox${type}-${id}-${body}`, secret: body })),
  chars(base64url, 35, 35).map((body) => ({ kind: 'google', planted: `AIza${body}`, secret: body })),
  fc
    .tuple(fc.constantFrom('sk_live_', 'rk_live_'), chars(base62, 24, 99))
    .map(([prefix, body]) => ({ kind: 'stripe', planted: `${prefix}${body}`, secret: body })),
  fc.tuple(fc.constantFrom('AKIA', 'ASIA'), chars(`${upper}${digits}`, 16, 16)).map(([prefix, body]) => ({
    kind: 'aws-key-id',
    planted: `${prefix}${body}`,
    secret: `${prefix}${body}`,
  })),
  fc
    .tuple(
      fc.constantFrom('aws_secret_access_key = ', 'AWS_SECRET_ACCESS_KEY=', 'aws_secret_access_key: '),
      chars(`${base62}/+`, 40, 40),
    )
    .map(([setting, value]) => ({ kind: 'aws-secret', planted: `${setting}${value}`, secret: value })),
  fc
    .tuple(chars(base64url, 10, 60), chars(base64url, 10, 200), chars(base64url, 20, 86))
    .map(([header, payload, signature]) => {
      const jwt = `eyJ${header}.eyJ${payload}.${signature}`;
      return { kind: 'jwt', planted: jwt, secret: jwt };
    }),
  fc
    .tuple(
      fc.constantFrom('Bearer ', 'bearer ', 'Authorization: Bearer ', 'Authorization: Basic '),
      chars(`${base62}._~+/-`, 12, 80),
    )
    .filter(([, token]) => /[A-Za-z0-9]{6}/.test(token))
    .map(([scheme, token]) => ({ kind: 'bearer', planted: `${scheme}${token}`, secret: token })),
  fc
    .tuple(
      fc.constantFrom('RSA ', 'EC ', 'OPENSSH ', 'ENCRYPTED ', ''),
      fc.array(chars(`${base62}+/`, 64, 64), { minLength: 1, maxLength: 5 }),
    )
    .map(([type, lines]) => ({
      kind: 'pem',
      planted: `-----BEGIN ${type}PRIVATE KEY-----\n${lines.join('\n')}\n-----END ${type}PRIVATE KEY-----`,
      secret: lines.join('\n'),
    })),
  fc
    .tuple(
      fc.constantFrom('https', 'postgres', 'redis', 'ftp'),
      chars(base62, 3, 12),
      chars(`${base62}!$*-._~`, 12, 30),
      fc.domain(),
    )
    .map(([scheme, user, password, host]) => ({
      kind: 'url-credentials',
      planted: `${scheme}://${user}:${password}@${host}/db`,
      secret: `${user}:${password}`,
    })),
  fc
    .tuple(
      fc.constantFrom(
        'key',
        'token',
        'secret',
        'password',
        'api_key',
        'access_token',
        'sig',
        'X-Amz-Signature',
      ),
      chars(`${base62}%-._~`, 12, 64),
      fc.domain(),
    )
    .map(([param, value, host]) => ({
      kind: 'query-parameter',
      planted: `https://${host}/path?page=2&${param}=${value}&lang=en`,
      secret: value,
    })),
  phoneArb.map(({ planted, digitsOnly }) => ({ kind: 'phone', planted, secret: digitsOnly })),
  ibanArb.map(({ planted, digitsOnly }) => ({ kind: 'iban', planted, secret: digitsOnly })),
  cardArb.map(({ planted, digitsOnly }) => ({ kind: 'card', planted, secret: digitsOnly })),
);

const surroundingArb = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.lorem(),
);
/** Secrets glued to word characters are out of scope: a separator stands between them and the text. */
const beforeArb = fc.constantFrom(' ', '\n', '\t', ' (', ': ', ' "', '<', '\n> ');
const afterArb = fc.constantFrom(' ', '\n', '\t', ') ', ', ', '. ', '" ', '>');

const plantedTextArb = fc
  .tuple(surroundingArb, beforeArb, plantedSecretArb, afterArb, surroundingArb)
  .map(([head, before, secret, after, tail]) => ({
    text: `${head}${before}${secret.planted}${after}${tail}`,
    secret,
  }));

const expectGone = (output: string, secret: Planted): void => {
  expect(output).not.toContain(secret.planted);
  expect(output).not.toContain(secret.secret);
  const digitsOnly = secret.secret.replace(/\D/g, '');
  if (digitsOnly.length >= 7 && ['phone', 'card', 'iban'].includes(secret.kind)) {
    expect(output.replace(/\D/g, '')).not.toContain(digitsOnly);
  }
};

/** Fragments that make pattern interactions likely: tokens next to numbers, names, separators. */
const soupArb = fc
  .array(
    fc.constantFrom(
      '[REDACTED:EMAIL]',
      '[REDACTED:SECRET]',
      '[REDACTED:PHONE]',
      '[REDACTED:CARD]',
      '[REDACTED]',
      '[REDACTED',
      'REDACTED:',
      'password=',
      'token: ',
      '"secret": "',
      'key=',
      'Bearer ',
      'Authorization: ',
      'https://',
      'a:b@',
      '@',
      '.',
      '-',
      ' ',
      '/',
      '(',
      ')',
      '+',
      '0',
      '030',
      '1234',
      '4111',
      '555',
      '2026-11-30',
      'DE89',
      'bob',
      'example.com',
      'eyJhbGciOi',
      'sk-',
      '\n',
    ),
    { maxLength: 40 },
  )
  .map((fragments) => fragments.join(''));

const anyTextArb = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  soupArb,
);

// ---------------------------------------------------------------------------------------------

describe('redactText: planted secrets never survive', () => {
  it('masks a planted secret of every kind anywhere in random text', () => {
    fc.assert(
      fc.property(plantedTextArb, ({ text, secret }) => {
        expectGone(redactText(text), secret);
      }),
      { numRuns: 2000 },
    );
  });

  it('masks several planted secrets in the same text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(plantedSecretArb, beforeArb, afterArb), { minLength: 2, maxLength: 6 }),
        (items) => {
          const text = items
            .map(([secret, before, after]) => `${before}${secret.planted}${after}`)
            .join('word');
          const output = redactText(text);
          for (const [secret] of items) expectGone(output, secret);
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each([
    ['an e-mail address', 'Write to jane.doe+news@example.co.uk today', 'Write to [REDACTED:EMAIL] today'],
    ['an internationalized address', 'jürgen@beispiel.de', '[REDACTED:EMAIL]'],
    ['an OpenAI project key', 'key sk-proj-AbCdEf0123456789AbCdEf0123', 'key [REDACTED:SECRET]'],
    ['an AWS key id', 'id AKIAIOSFODNN7EXAMPLE.', 'id [REDACTED:SECRET].'],
    ['an env secret', 'OPENAI_API_KEY=sk-abc', 'OPENAI_API_KEY=[REDACTED:SECRET]'],
    [
      'a JSON password with spaces',
      '{"password": "correct horse battery"}',
      '{"password": "[REDACTED:SECRET]"}',
    ],
    ['a Basic authorization header', 'Authorization: Basic dXNlcjpwYXNz', 'Authorization: [REDACTED:SECRET]'],
    [
      'URL credentials',
      'postgres://app:s3cr3t@db.internal:5432/x',
      'postgres://[REDACTED:SECRET]@db.internal:5432/x',
    ],
    [
      'a query token',
      'GET /cb?code_id=1&access_token=abc123&x=1',
      'GET /cb?code_id=1&access_token=[REDACTED:SECRET]&x=1',
    ],
    [
      'a signed URL',
      'https://b.s3.amazonaws.com/o?X-Amz-Signature=ab12cd',
      'https://b.s3.amazonaws.com/o?X-Amz-Signature=[REDACTED:SECRET]',
    ],
    ['a German phone', 'Tel. +49 (0)30 1234567', 'Tel. [REDACTED:PHONE]'],
    ['a US phone', 'call (555) 123-4567 now', 'call [REDACTED:PHONE] now'],
    ['a French phone', '06 12 34 56 78', '[REDACTED:PHONE]'],
    ['a printed IBAN', 'IBAN DE89 3704 0044 0532 0130 00.', 'IBAN [REDACTED:IBAN].'],
    ['an IBAN followed by words', 'PL61109010140000071219812874 egestas in', '[REDACTED:IBAN] egestas in'],
    ['an IBAN after an IBAN-shaped word', 'AF00 DE36000000000000000000', 'AF00 [REDACTED:IBAN]'],
    ['a lower-case IBAN followed by words', 'gb29nwbk60161331926819 to pay', '[REDACTED:IBAN] to pay'],
    ['an Amex card', 'Amex 3782 822463 10005', 'Amex [REDACTED:CARD]'],
    ['a card in a longer number run', '12 4111111111111111', '12 [REDACTED:CARD]'],
    ['a truncated PEM key (no END line)', '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg', '[REDACTED:SECRET]'],
  ])('masks %s', (_name, input, expected) => {
    expect(redactText(input)).toBe(expected);
  });
});

describe('redactText: ordinary text survives unchanged', () => {
  it.each([
    ['an ordinary sentence', 'The quick brown fox jumps over the lazy dog.'],
    ['an ISO date', 'Due on 2026-11-30.'],
    ['a timestamp', 'at 2026-11-30T10:15:00Z'],
    ['European and US dates', '30.11.2026 and 11/30/2026 and 2026/11/30'],
    ['a date followed by a time', 'on 2026-11-30 10:15'],
    ['version strings', 'v1.2.3, 1.2.3, Node 20.19.25, vitest@4.1.12'],
    ['short numbers', 'We fixed 42 bugs in 3 files, 7 of them in 2 hours; 12345 users.'],
    ['numbers with thousands separators', 'Total 1,234,567.89 EUR or 1.234.567,89 EUR'],
    ['IPv4 addresses', '192.168.1.10 and 10.0.0.1 and 192.168.100.200 and 192.168.100.200 12'],
    ['an ISBN', 'ISBN 978-3-16-148410-0'],
    ['a UUID', 'task 123e4567-e89b-12d3-a456-426614174000'],
    ['a year range and a time', '2020-2024, 10:15:30'],
    ['an npm scope and a mention', '@aws-sdk/client-kms, ping @bob'],
    ['the word key in prose', 'Primary key: user_id. The secretary: Bob. max_tokens: 5'],
    ['a non-Luhn 16-digit order number', 'order 1234567812345678'],
    ['an ordinary URL', 'https://example.com/docs?page=2&lang=en#top'],
    ['a short git hash and a hex colour', 'commit 3f78685 colour #ff8800'],
  ])('keeps %s', (_name, input) => {
    expect(redactText(input)).toBe(input);
  });

  // Over-redaction chosen on purpose (docs/decisions/0005): these are masked.
  it.each([
    [
      'a word of 8+ characters after "bearer" (false positive, documented)',
      'bearer instruments',
      'bearer [REDACTED:SECRET]',
    ],
    [
      'a 9+ digit number grouped by 3 (false positive: looks like a phone)',
      '123 456 789',
      '[REDACTED:PHONE]',
    ],
    ['a mistyped IBAN in capitals (no checksum needed)', 'DE00 3704 0044 0532 0130 00', '[REDACTED:IBAN]'],
    ['a card-grouped number that fails Luhn', '1234 5678 9012 3456', '[REDACTED:CARD]'],
    [
      'a value after a secret-like name, whatever it is',
      'password: must be 8 characters',
      'password: [REDACTED:SECRET] be 8 characters',
    ],
  ])('masks %s', (_name, input, expected) => {
    expect(redactText(input)).toBe(expected);
  });

  it('does not mask a lower-case IBAN-shaped string whose checksum fails (documented)', () => {
    expect(redactText('de00370400440532013000')).toBe('de00370400440532013000');
  });
});

describe('redactText: idempotent and deterministic', () => {
  it('redacting twice equals redacting once, over arbitrary strings', () => {
    fc.assert(
      fc.property(anyTextArb, (text) => {
        const once = redactText(text);
        expect(redactText(once)).toBe(once);
      }),
      { numRuns: 3000 },
    );
  });

  it('redacting twice equals redacting once, with planted secrets', () => {
    fc.assert(
      fc.property(plantedTextArb, ({ text }) => {
        const once = redactText(text);
        expect(redactText(once)).toBe(once);
      }),
      { numRuns: 1000 },
    );
  });

  it('replacement tokens are left alone, alone or in context', () => {
    const tokens = [
      '[REDACTED]',
      '[REDACTED:SECRET]',
      '[REDACTED:EMAIL]',
      '[REDACTED:PHONE]',
      '[REDACTED:IBAN]',
      '[REDACTED:CARD]',
    ];
    for (const token of tokens) {
      for (const text of [
        token,
        `password=${token}`,
        `token: ${token}`,
        `Bearer ${token}`,
        `https://${token}@host`,
        `${token}@example.com`,
        `"secret": "${token}"`,
      ]) {
        expect(redactText(text)).toBe(text);
      }
    }
  });

  it('is deterministic: the same input always gives the same output, from any redactor instance', () => {
    const other = createRedactor(redactionPatterns);
    fc.assert(
      fc.property(
        fc.oneof(
          anyTextArb,
          plantedTextArb.map(({ text }) => text),
        ),
        (text) => {
          const first = redactText(text);
          expect(redactText(text)).toBe(first);
          expect(other.redactText(text)).toBe(first);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('redacting parts, messages and artifacts', () => {
  it('redacts every string inside data parts, recursively, keys included', () => {
    const parts: Part[] = [
      {
        data: {
          user: { email: 'ann@example.com', phones: ['+44 20 7946 0958', 42], active: true, note: null },
          'bob@example.com': 'a key that is an address',
          card: 4111111111111111,
          count: 12,
          nested: [[{ text: 'iban GB29 NWBK 6016 1331 9268 19' }]],
        },
        metadata: { source: 'mail from carl@example.com' },
        mediaType: 'application/json',
      },
    ];
    expect(redactParts(parts)).toEqual([
      {
        data: {
          user: { email: '[REDACTED:EMAIL]', phones: ['[REDACTED:PHONE]', 42], active: true, note: null },
          '[REDACTED:EMAIL]': 'a key that is an address',
          card: '[REDACTED:CARD]',
          count: 12,
          nested: [[{ text: 'iban [REDACTED:IBAN]' }]],
        },
        metadata: { source: 'mail from [REDACTED:EMAIL]' },
        mediaType: 'application/json',
      },
    ]);
  });

  it('masks every value under a secret-looking key, whatever it looks like', () => {
    const data: JsonValue = {
      password: 'hunter2',
      apiKey: 'plain',
      pin: 1234,
      credentials: { user: 'u', pass: 'p', rotated: false },
      inputTokens: 120,
      tokenizer: 'cl100k',
      empty: { token: '' },
    };
    expect(redactJson(data)).toEqual({
      password: '[REDACTED:SECRET]',
      apiKey: '[REDACTED:SECRET]',
      pin: '[REDACTED:SECRET]',
      credentials: { user: '[REDACTED:SECRET]', pass: '[REDACTED:SECRET]', rotated: false },
      inputTokens: 120,
      tokenizer: 'cl100k',
      empty: { token: '' },
    });
    expect(isSecretKey('X-Api-Key')).toBe(true);
    expect(isSecretKey('max_tokens')).toBe(false);
  });

  it('keeps keys distinct when two of them redact to the same text', () => {
    const redacted = redactJson({ 'a@example.com': 1, 'b@example.com': 2, '[REDACTED:EMAIL] #2': 3 });
    expect(redacted).toEqual({
      '[REDACTED:EMAIL]': 1,
      '[REDACTED:EMAIL] #2': 2,
      '[REDACTED:EMAIL] #2 #2': 3,
    });
    expect(redactJson(redacted)).toEqual(redacted);
  });

  it('keeps __proto__ as an own key and never touches prototypes', () => {
    const data = JSON.parse('{"__proto__": {"email": "x@example.com"}}') as JsonValue;
    const redacted = redactJson(data) as Record<string, unknown>;
    expect(Object.getPrototypeOf(redacted)).toBe(Object.prototype);
    expect(Object.hasOwn(redacted, '__proto__')).toBe(true);
    expect(JSON.stringify(redacted)).toBe('{"__proto__":{"email":"[REDACTED:EMAIL]"}}');
  });

  it('redacts planted secrets at any depth of arbitrary JSON, and is idempotent there', () => {
    const leafArb = fc.oneof(
      plantedSecretArb.map((secret) => secret),
      fc.string(),
    );
    const jsonWithPlantsArb = fc.letrec<{ node: JsonValue }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        leafArb.map((leaf) => (typeof leaf === 'string' ? leaf : leaf.planted)),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.emailAddress()), tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(jsonWithPlantsArb, plantedSecretArb, (data, secret) => {
        const input = { wrapper: [data, { deep: { deeper: secret.planted } }] };
        const output = redactJson(input);
        expectGone(JSON.stringify(output), secret);
        expect(redactJson(output)).toEqual(output);
      }),
      { numRuns: 500 },
    );
  });

  it('replaces file parts by a note, without bytes, URL, file name or metadata', () => {
    const parts: Part[] = [
      {
        raw: 'SGVsbG8=',
        filename: 'jane-doe-passport.pdf',
        mediaType: 'application/pdf',
        metadata: { owner: 'jane' },
      },
      { url: 'https://files.example.com/s3cr3t?sig=abc', filename: 'x.png' },
      { url: 'https://x', mediaType: 'text/plain; charset=jane@example.com' },
    ];
    const redacted = redactParts(parts);
    expect(redacted).toEqual([
      { text: '[file removed by redaction: application/pdf]' },
      { text: '[file removed by redaction: file]' },
      { text: '[file removed by redaction: file]' },
    ]);
    expect(JSON.stringify(redacted)).not.toMatch(/jane|s3cr3t|SGVsbG8|passport/);
    expect(redactParts(redacted)).toEqual(redacted);
  });

  it('redacts text parts with their filename and metadata', () => {
    expect(
      redactParts([
        {
          text: 'mail ann@example.com',
          filename: 'ann@example.com.txt',
          metadata: { by: '+1 555 123 4567' },
        },
      ]),
    ).toEqual([
      { text: 'mail [REDACTED:EMAIL]', filename: '[REDACTED:EMAIL]', metadata: { by: '[REDACTED:PHONE]' } },
    ]);
  });

  it('redacts a message and artifacts, keeping ids and structure', () => {
    const message: Message = {
      messageId: 'm-1',
      contextId: 'c-1',
      taskId: 't-1',
      role: 'ROLE_AGENT',
      parts: [
        { text: 'Your card 4111 1111 1111 1111 is on file.' },
        { url: 'https://x/y.png', mediaType: 'image/png' },
      ],
      metadata: { contact: 'ann@example.com' },
      extensions: ['https://ext.example.com/v1?token=abc'],
      referenceTaskIds: ['t-0'],
    };
    expect(redactMessage(message)).toEqual({
      messageId: 'm-1',
      contextId: 'c-1',
      taskId: 't-1',
      role: 'ROLE_AGENT',
      parts: [
        { text: 'Your card [REDACTED:CARD] is on file.' },
        { text: '[file removed by redaction: image/png]' },
      ],
      metadata: { contact: '[REDACTED:EMAIL]' },
      extensions: ['https://ext.example.com/v1?token=[REDACTED:SECRET]'],
      referenceTaskIds: ['t-0'],
    });

    const artifacts: Artifact[] = [
      {
        artifactId: 'a-1',
        name: 'Report for ann@example.com',
        description: 'IBAN GB29NWBK60161331926819',
        parts: [{ data: { secret: 'x', value: 'sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA' } }],
      },
    ];
    const redacted = redactArtifacts(artifacts);
    expect(redacted).toEqual([
      {
        artifactId: 'a-1',
        name: 'Report for [REDACTED:EMAIL]',
        description: 'IBAN [REDACTED:IBAN]',
        parts: [{ data: { secret: '[REDACTED:SECRET]', value: '[REDACTED:SECRET]' } }],
      },
    ]);
    expect(redactArtifacts(redacted)).toEqual(redacted);
  });

  it('redacting a message twice equals redacting it once, over arbitrary parts', () => {
    const partArb: fc.Arbitrary<Part> = fc.oneof(
      fc.record({
        text: fc.oneof(
          anyTextArb,
          plantedTextArb.map(({ text }) => text),
        ),
      }),
      fc.record({ data: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue> }),
      fc.record({ raw: fc.base64String(), mediaType: fc.string({ maxLength: 20 }) }),
      fc.record({ url: fc.webUrl(), filename: fc.string({ maxLength: 12 }) }),
    );
    fc.assert(
      fc.property(fc.array(partArb, { maxLength: 5 }), (parts) => {
        const message: Message = { messageId: 'm', role: 'ROLE_USER', parts };
        const once = redactMessage(message);
        expect(redactMessage(once)).toEqual(once);
      }),
      { numRuns: 500 },
    );
  });
});

describe('failing closed', () => {
  const throwing: RedactionPattern = {
    id: 'throws',
    regex: /e/g,
    replace: () => {
      throw new Error('pattern failed');
    },
  };

  it('returns a fully masked value when a pattern throws', () => {
    const redactor = createRedactor([...redactionPatterns, throwing]);
    expect(redactor.redactText('hello ann@example.com')).toBe(fullyRedacted);
    expect(redactor.redactText('xyz')).toBe('xyz');
  });

  it('masks every string of parts and messages when a pattern throws', () => {
    const redactor = createRedactor([throwing]);
    const message: Message = {
      messageId: 'm',
      role: 'ROLE_AGENT',
      parts: [{ text: 'secret plan' }, { data: { note: 'the plan', list: ['one', 'ok'] } }],
      metadata: { where: 'here' },
    };
    expect(redactor.redactMessage(message)).toEqual({
      messageId: 'm',
      role: 'ROLE_AGENT',
      parts: [
        { text: fullyRedacted },
        { data: { [fullyRedacted]: fullyRedacted, list: [fullyRedacted, 'ok'] } },
      ],
      metadata: { [fullyRedacted]: fullyRedacted },
    });
  });

  it('masks a text that never settles', () => {
    const growing: RedactionPattern = { id: 'grows', regex: /x+/g, replace: (match) => `${match[0]}x` };
    expect(createRedactor([growing]).redactText('axb')).toBe(fullyRedacted);
  });

  it('masks a pattern that needs capture indices but has none', () => {
    const broken: RedactionPattern = {
      ...redactionPatterns.find((p) => p.id === 'bearer-token')!,
      regex: /bearer (\S+)/gi,
    };
    expect(createRedactor([broken]).redactText('Bearer abcdefghijkl')).toBe(fullyRedacted);
  });

  it('masks values that are not what the types promise', () => {
    expect(redactText(42 as unknown as string)).toBe(fullyRedacted);
    expect(redactText(undefined as unknown as string)).toBe(fullyRedacted);
    expect(redactParts([{ text: { nested: 'ann@example.com' } } as unknown as Part])).toEqual([
      { text: fullyRedacted },
    ]);
    expect(redactParts([{ other: 'ann@example.com' } as unknown as Part])).toEqual([{ text: fullyRedacted }]);
    expect(redactParts([null as unknown as Part])).toEqual([{ text: fullyRedacted }]);
    expect(redactJson({ n: 10n, f: () => 1, u: undefined } as unknown as JsonValue)).toEqual({
      n: fullyRedacted,
      f: fullyRedacted,
      u: fullyRedacted,
    });
  });

  it('masks a data part that cannot be walked (a cycle)', () => {
    const cyclic: Record<string, unknown> = { email: 'ann@example.com' };
    cyclic.self = cyclic;
    expect(redactParts([{ data: cyclic as JsonValue }])).toEqual([{ text: fullyRedacted }]);
  });
});

describe('no catastrophic backtracking (100 KB adversarial inputs)', () => {
  const size = 100_000;
  const fill = (unit: string): string => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
  const units = [
    'a',
    '1',
    '1 ',
    '1-',
    '12 ',
    '0 1',
    '+1 ',
    '(1',
    '1.',
    '2026-11-30 ',
    '192.168.1.1.',
    'a@',
    'a.',
    'a@a.',
    'é@',
    '{|}',
    '-----BEGIN PRIVATE KEY-----',
    '-----BEGIN A',
    '-----BEGIN PRIVATE KEY-----\nAAAA-',
    'eyJ',
    'eyJaaaaaaaaa.',
    'sk-',
    'sk-a',
    'password="',
    'password: ',
    'token=',
    'key=a',
    'a_a.',
    'https://',
    'a://a',
    'a://a:b@',
    'Bearer ',
    'bearer aaaaaaaaa ',
    'authorization: ',
    'authorization: a ',
    'DE89 ',
    'DE89',
    'de00',
    'AKIA',
    'AIza',
    'ghp_',
    'github_pat_',
    'xoxb-',
    'sk_live_',
    '(030) ',
    '030 ',
    '4111 ',
    '[REDACTED:EMAIL]',
  ];
  const adversarial = units.map(fill);

  it.each(redactionPatterns.map((pattern) => [pattern.id, pattern] as const))(
    'pattern %s finishes on every adversarial input',
    (_id, pattern) => {
      const redactor = createRedactor([pattern]);
      for (const text of adversarial) {
        expect(typeof redactor.redactText(text)).toBe('string');
      }
    },
  );

  it.each(units)('the full redactor finishes on %j repeated to 100 KB, idempotently', (unit) => {
    const output = redactText(fill(unit));
    expect(redactText(output)).toBe(output);
  });
});
